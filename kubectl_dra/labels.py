"""apimachinery's label selectors, as the scheduler's pod-to-pod plugins use them.

``from_label_selector`` is ``metav1.LabelSelectorAsSelector`` over the typed
:class:`~kubectl_dra.model.pod.LabelSelector` view. The nil/empty distinction is the whole point:

- ``None`` (the field is absent or null) is ``labels.Nothing()``: it matches no label set, and
  ``empty`` is False for it;
- a selector with neither ``matchLabels`` nor ``matchExpressions`` (``{}``) is
  ``labels.Everything()``: it matches every label set, and ``empty`` is True.

Callers read these differently, exactly as upstream does: PodTopologySpread's
``countPodsMatchSelector`` counts *no* existing pod when the selector is ``empty`` (so ``{}``
counts nothing there, while the incoming pod and nominated pods still match it); an affinity term's
``namespaceSelector: {}`` means "all namespaces" and a nil one "none besides ``namespaces``"; a
nil ``labelSelector`` on an affinity term or spread constraint matches no pod.

Invalid selectors raise :class:`SelectorError` with apimachinery's message (``NewRequirement``'s
field errors), so a caller can answer as the scheduler does (an Error status or a refused pod).
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Mapping

IN, NOT_IN, EXISTS, DOES_NOT_EXIST, EQUALS, GT, LT = "in", "notin", "exists", "!", "=", "gt", "lt"
_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
NODE_OPERATORS = {**_OPERATORS, "Gt": GT, "Lt": LT}  # v1.NodeSelectorOperator -> selection.Operator
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)  # strconv.ParseInt(s, 10, 64) syntax

# k8s.io/apimachinery/pkg/util/validation: IsQualifiedName and IsValidLabelValue, in their words
_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME = re.compile(_NAME_FMT, re.ASCII)
_DNS1123_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123 = re.compile(_DNS1123_FMT, re.ASCII)
_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_VALUE = re.compile(_VALUE_FMT, re.ASCII)
_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character")


class SelectorError(ValueError):
    """A selector ``LabelSelectorAsSelector`` refuses; the message is apimachinery's."""


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: None where Go fails (Python's int() accepts more)."""
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if -2**63 <= value < 2**63 else None


class Requirement:
    """``labels.Requirement``: key, operator, values (a tuple, kept in the order given)."""

    __slots__ = ("key", "operator", "values", "_set")

    def __init__(self, key: str, operator: str, values: Iterable[str] = ()) -> None:
        self.key, self.operator, self.values = key, operator, tuple(values)
        self._set = frozenset(self.values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN or op == EQUALS:
            value = labels.get(self.key)
            return value is not None and value in self._set
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self._set
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)  # Gt, Lt
        if value is None or len(self.values) != 1:
            return False
        have, want = parse_int64(value), parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == GT else have < want

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirement) and (self.key, self.operator, self.values) == \
            (other.key, other.operator, other.values)

    def __hash__(self) -> int:
        return hash((self.key, self.operator, self.values))

    def __str__(self) -> str:
        """``Requirement.String()``: ``k``, ``!k``, ``k=v``, ``k in (a,b)``, ``k notin (a,b)``."""
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == EQUALS:
            return f"{self.key}={self.values[0]}"
        if self.operator in (GT, LT):
            return f"{self.key}{'>' if self.operator == GT else '<'}{self.values[0]}"
        return f"{self.key} {self.operator} ({','.join(sorted(self.values))})"

    __repr__ = __str__


class Selector:
    """``labels.Selector``: the AND of its requirements; ``nothing`` is ``labels.Nothing()``."""

    __slots__ = ("requirements", "nothing")

    def __init__(self, requirements: Iterable[Requirement] = (), nothing: bool = False) -> None:
        self.requirements: tuple[Requirement, ...] = tuple(sorted(requirements, key=lambda r: r.key))
        self.nothing = nothing

    @property
    def empty(self) -> bool:
        """``Selector.Empty()``: True for ``Everything()`` only (``Nothing()`` is not empty)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for r in self.requirements:
            if not r.matches(labels):
                return False
        return True

    def add(self, *requirements: Requirement) -> "Selector":
        """``Selector.Add``: a new selector with more requirements (``Nothing()`` stays nothing)."""
        if self.nothing:
            return self
        return Selector((*self.requirements, *requirements))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Selector) and self.nothing == other.nothing and \
            sorted(map(str, self.requirements)) == sorted(map(str, other.requirements))

    def __hash__(self) -> int:
        return hash((self.nothing, self.requirements))

    def __str__(self) -> str:
        if self.nothing:
            return "<nothing>"
        return ",".join(map(str, self.requirements)) or "<everything>"

    __repr__ = __str__


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: ``k=v`` for each entry, unvalidated; an empty set is Everything."""
    return Selector(Requirement(k, EQUALS, (v,)) for k, v in labels.items())


def from_label_selector(selector) -> Selector:
    """``metav1.LabelSelectorAsSelector``: None -> Nothing, ``{}`` -> Everything, else the
    requirements (matchLabels as ``k=v``); :class:`SelectorError` for what apimachinery refuses."""
    if selector is None:
        return NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return EVERYTHING
    requirements = [new_requirement(k, EQUALS, [v]) for k, v in selector.match_labels.items()]
    for expr in selector.match_expressions:
        op = _OPERATORS.get(expr.operator)
        if op is None:
            raise SelectorError(f"{_go_quote(expr.operator)} is not a valid label selector operator")
        requirements.append(new_requirement(expr.key, op, list(expr.values)))
    return Selector(requirements)


def new_requirement(key: str, op: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement`` with its validation (field errors, aggregated)."""
    errors = []
    key_errors = qualified_name_errors(key)
    if key_errors:
        errors.append(f"key: Invalid value: {_go_quote(key)}: {'; '.join(key_errors)}")
    if op in (IN, NOT_IN) and not values:
        errors.append(f"values: Invalid value: {_json(values)}: for 'in', 'notin' operators, values set can't be empty")
    elif op == EQUALS and len(values) != 1:
        errors.append(f"values: Invalid value: {_json(values)}: exact-match compatibility requires one single value")
    elif op in (EXISTS, DOES_NOT_EXIST) and values:
        errors.append(f"values: Invalid value: {_json(values)}: values set must be empty for exists and does not exist")
    elif op in (GT, LT):
        if len(values) != 1:
            errors.append(f"values: Invalid value: {_json(values)}: for 'Gt', 'Lt' operators, exactly one value is "
                          "required")
        errors.extend(f"values[{i}]: Invalid value: {_go_quote(v)}: for 'Gt', 'Lt' operators, the value must be an "
                      "integer" for i, v in enumerate(values) if parse_int64(v) is None)
    for i, value in enumerate(values):
        value_errors = label_value_errors(value)
        if value_errors:
            errors.append(f"values[{i}][{key}]: Invalid value: {_go_quote(value)}: {'; '.join(value_errors)}")
    if errors:
        unique = list(dict.fromkeys(errors))
        raise SelectorError(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
    return Requirement(key, op, values)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError`` wording, double spaces included."""
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _length(text: str, unit: str) -> int:
    return len(text.encode()) if unit == "bytes" else len(text)


def qualified_name_errors(key: str, *, what: str = "a valid label key", unit: str = "bytes") -> list[str]:
    """``content.IsLabelKey`` (v0.37.2 wording: lengths in bytes). Karpenter's NodeOverlay validation
    runs an older apimachinery's ``IsQualifiedName``: ``what="a qualified name"``, lengths in
    ``unit="characters"``."""
    parts = key.split("/")
    errors = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if _length(prefix, unit) > 253:
                errors.append(f"prefix part must be no more than 253 {unit}")
            if not _DNS1123.fullmatch(prefix):
                errors.append("prefix part " + _regex_error(
                    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                    "'.', and must start and end with an alphanumeric character", _DNS1123_FMT, "example.com"))
    else:
        return [f"{what} " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errors.append("name part must be non-empty")
    elif _length(name, unit) > 63:
        errors.append(f"name part must be no more than 63 {unit}")
    if not _NAME.fullmatch(name):
        errors.append("name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc"))
    return errors


def label_value_errors(value: str, *, unit: str = "bytes") -> list[str]:
    """``content.IsLabelValue`` (``unit`` as for :func:`qualified_name_errors`)."""
    errors = []
    if _length(value, unit) > 63:
        errors.append(f"must be no more than 63 {unit}")
    if not _VALUE.fullmatch(value):
        errors.append(_regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character", _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the printable strings selectors hold (json escapes match it there)."""
    return json.dumps(text, ensure_ascii=False)


def _json(values: list[str]) -> str:
    """``json.Marshal`` of the values field errors carry (an empty list is Go's nil slice: null)."""
    return json.dumps(values, separators=(",", ":")) if values else "null"
