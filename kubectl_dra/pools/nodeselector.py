"""A core/v1 NodeSelector matched against a node, as component-helpers ``nodeaffinity`` does.

Terms are ORed and empty terms skipped; inside a term, ``matchExpressions`` (node labels) and
``matchFields`` (only ``metadata.name``) are ANDed. A selector that does not parse (an unknown
operator, ``In`` without values, ``Gt`` with a non-integer) is an error, not a non-match, so the
caller can say why instead of silently excluding a node.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63


class NodeSelectorError(ValueError):
    """The selector cannot be evaluated (the scheduler fails on it the same way)."""


def _int(text: str) -> int | None:
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


def _check(requirement: Any, where: str, fields: bool) -> tuple[str, str, list[str]]:
    if not isinstance(requirement, Mapping):
        raise NodeSelectorError(f"{where}: not an object")
    key, operator = requirement.get("key"), requirement.get("operator")
    values = requirement.get("values") or []
    if not isinstance(key, str) or not key:
        raise NodeSelectorError(f"{where}.key: required")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise NodeSelectorError(f"{where}.values: must be a list of strings")
    allowed = ("In", "NotIn") if fields else ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
    if operator not in allowed:
        raise NodeSelectorError(f'{where}.operator: "{operator}" is not supported (one of {", ".join(allowed)})')
    if fields and len(values) != 1:
        raise NodeSelectorError(f"{where}.values: must have one element")
    if operator in ("In", "NotIn") and not values:
        raise NodeSelectorError(f"{where}.values: must be non-empty for {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise NodeSelectorError(f"{where}.values: must be empty for {operator}")
    if operator in ("Gt", "Lt") and (len(values) != 1 or _int(values[0]) is None):
        raise NodeSelectorError(f"{where}.values: {operator} needs exactly one integer value")
    return key, operator, values


def _label_matches(key: str, operator: str, values: list[str], labels: Mapping[str, str]) -> bool:
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    value = _int(labels[key]) if present else None
    if value is None:
        return False
    bound = int(values[0])
    return value > bound if operator == "Gt" else value < bound


def node_selector_matches(selector: Mapping[str, Any], node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether the node (its name and labels) satisfies the selector; :class:`NodeSelectorError`
    when any term is invalid (``NewNodeSelector`` refuses the whole selector then)."""
    terms = selector.get("nodeSelectorTerms") if isinstance(selector, Mapping) else None
    if not isinstance(terms, list):
        raise NodeSelectorError("nodeSelectorTerms: must be a list")
    parsed_terms, errors = [], []
    for index, term in enumerate(terms):
        where = f"nodeSelectorTerms[{index}]"
        if not isinstance(term, Mapping):
            errors.append(f"{where}: not an object")
            continue
        expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
        wrong = [name for name, value in (("matchExpressions", expressions), ("matchFields", fields))
                 if not isinstance(value, list)]
        if wrong:  # the API server's schema refuses any other type; so does the scheduler's decoder
            errors.extend(f"{where}.{name}: must be a list" for name in wrong)
            continue
        if not expressions and not fields:
            continue  # an empty term matches nothing
        try:
            parsed_terms.append(([_check(r, f"{where}.matchExpressions[{i}]", False) for i, r in enumerate(expressions)],
                                 [_check(r, f"{where}.matchFields[{i}]", True) for i, r in enumerate(fields)]))
        except NodeSelectorError as exc:
            errors.append(str(exc))
    if errors:
        raise NodeSelectorError("; ".join(errors))
    node_fields = {"metadata.name": node_name} if node_name else {}
    for expressions, fields in parsed_terms:
        if all(_label_matches(k, op, v, labels) for k, op, v in expressions) and (not node_fields or all(
                (node_fields.get(k, "") == v[0]) == (op == "In") for k, op, v in fields)):
            return True
    return False
