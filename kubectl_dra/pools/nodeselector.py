"""A core/v1 NodeSelector matched against a node, as component-helpers ``nodeaffinity`` does.

Terms are ORed and empty terms skipped; inside a term, ``matchExpressions`` (node labels) and
``matchFields`` (only ``metadata.name``) are ANDed. A requirement that does not parse (an unknown
operator, ``In`` without values, ``Gt`` with a non-integer, a key or value that is not a valid
label key or value, as ``labels.NewRequirement`` checks them) makes its term invalid.

Two ways to use it, as upstream has two: :func:`node_selector_matches` is ``NewNodeSelector``
(any invalid term refuses the whole selector: an error, not a non-match, so the caller can say why
instead of silently excluding a node; DRA's slices and allocations use it), and
:func:`parse_terms` with :meth:`Term.mismatch` is ``NewLazyErrorNodeSelector`` (an invalid term
never matches, the valid ones still may: the scheduler's NodeAffinity filter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kubectl_dra.labels import label_value_errors, parse_int64, qualified_name_errors

LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")


class NodeSelectorError(ValueError):
    """The selector cannot be evaluated (the scheduler fails on it the same way)."""


def label_key_valid(key: str) -> bool:
    """apimachinery ``content.IsLabelKey`` (one implementation: kubectl_dra/labels.py)."""
    return not qualified_name_errors(key)


def label_value_valid(value: str) -> bool:
    """apimachinery ``IsValidLabelValue``."""
    return not label_value_errors(value)


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]

    @property
    def wanted(self) -> str:
        """``In [a, b]``, ``Exists``, ``Gt [4]``: the requirement without its key, for a person."""
        if self.operator in ("Exists", "DoesNotExist"):
            return self.operator
        return f"{self.operator} [{', '.join(self.values)}]"


def _check(requirement: Any, where: str, fields: bool) -> Requirement:
    if not isinstance(requirement, Mapping):
        raise NodeSelectorError(f"{where}: not an object")
    key, operator = requirement.get("key"), requirement.get("operator")
    values = requirement.get("values") or []
    if not isinstance(key, str) or not (key or fields):  # a field key is not checked (fields.OneTermEqualSelector)
        raise NodeSelectorError(f"{where}.key: required")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise NodeSelectorError(f"{where}.values: must be a list of strings")
    allowed = FIELD_OPERATORS if fields else LABEL_OPERATORS
    if operator not in allowed:
        raise NodeSelectorError(f'{where}.operator: "{operator}" is not supported (one of {", ".join(allowed)})')
    if fields:
        if len(values) != 1:
            raise NodeSelectorError(f"{where}.values: must have one element")
        return Requirement(key, operator, tuple(values))
    if not label_key_valid(key):
        raise NodeSelectorError(f'{where}.key: "{key}" is not a valid label key')
    if operator in ("In", "NotIn") and not values:
        raise NodeSelectorError(f"{where}.values: must be non-empty for {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise NodeSelectorError(f"{where}.values: must be empty for {operator}")
    if operator in ("Gt", "Lt") and (len(values) != 1 or parse_int64(values[0]) is None):
        raise NodeSelectorError(f"{where}.values: {operator} needs exactly one integer value")
    bad = [v for v in values if not label_value_valid(v)]
    if bad:  # NewRequirement checks every value, Gt/Lt bounds too: "-1" is not a label value
        raise NodeSelectorError(f'{where}.values: "{bad[0]}" is not a valid label value')
    return Requirement(key, operator, tuple(values))


def label_requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    """``labels.Requirement.Matches``."""
    key, operator, values = req.key, req.operator, req.values
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    value = parse_int64(labels[key]) if present else None
    if value is None:
        return False
    bound = int(values[0])
    return value > bound if operator == "Gt" else value < bound


@dataclass(frozen=True)
class Term:
    """One non-empty term: its index in ``nodeSelectorTerms``, its requirements, or why it is invalid."""
    index: int
    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()
    error: str | None = None

    def mismatch(self, node_name: str, labels: Mapping[str, str]) -> str | None:
        """None when the node matches the term, else the first requirement it fails (or the parse
        error: an invalid term matches nothing)."""
        if self.error is not None:
            return self.error
        for req in self.expressions:
            if not label_requirement_matches(req, labels):
                have = f'"{labels[req.key]}"' if req.key in labels else "not set"
                return f"label {req.key}: {have}, wanted {req.wanted}"
        if node_name:  # a node without a name has no fields: matchFields are not checked
            for req in self.fields:
                have = node_name if req.key == "metadata.name" else ""
                if (have == req.values[0]) != (req.operator == "In"):
                    return f'{req.key}: "{have}", wanted {req.wanted}'
        return None


def _parse_term(index: int, term: Any) -> Term | None:
    where = f"nodeSelectorTerms[{index}]"
    if not isinstance(term, Mapping):
        return Term(index, error=f"{where}: not an object")
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    wrong = [name for name, value in (("matchExpressions", expressions), ("matchFields", fields))
             if not isinstance(value, list)]
    if wrong:  # the API server's schema refuses any other type; so does the scheduler's decoder
        return Term(index, error="; ".join(f"{where}.{name}: must be a list" for name in wrong))
    if not expressions and not fields:
        return None  # an empty term matches nothing
    errors, parsed = [], ([], [])
    for name, items, out, is_field in (("matchExpressions", expressions, parsed[0], False),
                                       ("matchFields", fields, parsed[1], True)):
        for i, requirement in enumerate(items):
            try:
                out.append(_check(requirement, f"{where}.{name}[{i}]", is_field))
            except NodeSelectorError as exc:
                errors.append(str(exc))
    if errors:
        return Term(index, error="; ".join(errors))
    return Term(index, tuple(parsed[0]), tuple(parsed[1]))


def parse_terms(selector: Mapping[str, Any]) -> list[Term]:
    """``NewLazyErrorNodeSelector``: every non-empty term, parsed or carrying its error.
    :class:`NodeSelectorError` only when ``nodeSelectorTerms`` is not a list at all."""
    terms = selector.get("nodeSelectorTerms") if isinstance(selector, Mapping) else None
    if not isinstance(terms, list):
        raise NodeSelectorError("nodeSelectorTerms: must be a list")
    return [t for i, term in enumerate(terms) if (t := _parse_term(i, term)) is not None]


def node_selector_matches(selector: Mapping[str, Any], node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether the node (its name and labels) satisfies the selector; :class:`NodeSelectorError`
    when any term is invalid (``NewNodeSelector`` refuses the whole selector then)."""
    terms = parse_terms(selector)
    errors = [t.error for t in terms if t.error is not None]
    if errors:
        raise NodeSelectorError("; ".join(errors))
    return any(t.mismatch(node_name, labels) is None for t in terms)
