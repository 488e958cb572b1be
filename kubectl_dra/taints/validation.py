"""A DeviceTaintRule as the v1.37 API server would take it, before a dry run judges it.

Errors are what the server refuses (the rule would never exist, so nothing it would do is shown):
a value it cannot decode, and ``ValidateDeviceTaintRule`` (pkg/apis/resource/validation): the
taint's key is required and its effect one of None, NoSchedule, NoExecute. Warnings are what its
field validation warns about and then drops (``fieldValidation=Warn``, the server's default):
unknown fields. A dropped field changes the rule (an unknown ``deviceSelector.selectors`` leaves a
selector that selects every device), so the dry run judges the rule the server would store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubectl_dra.model.resource import DeviceTaintRule

EFFECTS = ("NoExecute", "NoSchedule", "None")  # validDeviceTaintEffects, as the server lists them

_META = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
         "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
         "ownerReferences", "finalizers", "managedFields"}
_CONDITION = {"type", "status", "observedGeneration", "lastTransitionTime", "reason", "message"}
SCHEMA: dict[str, Any] = {
    "apiVersion": None, "kind": None, "metadata": {k: None for k in _META},
    "spec": {"deviceSelector": {"driver": None, "pool": None, "device": None},
             "taint": {"key": None, "value": None, "effect": None, "timeAdded": None}},
    "status": {"conditions": [{k: None for k in _CONDITION}]},
}
"""The fields of resource.k8s.io/v1 (and v1beta2, v1alpha3) DeviceTaintRule; None: a leaf."""


def unknown_fields(raw: Any, schema: Any = SCHEMA, path: str = "") -> list[str]:
    """Paths of fields the API does not define, as the server's warning names them."""
    found = []
    if isinstance(schema, dict) and isinstance(raw, dict):
        for key, value in raw.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in schema:
                found.append(where)
            elif schema[key] is not None:
                found += unknown_fields(value, schema[key], where)
    elif isinstance(schema, list) and isinstance(raw, list):
        for index, item in enumerate(raw):
            found += unknown_fields(item, schema[0], f"{path}[{index}]")
    return found


def _rfc3339(value: Any) -> bool:
    if not isinstance(value, str) or "T" not in value.upper():
        return False
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00")).tzinfo is not None
    except ValueError:
        return False


def rule_problems(raw: dict, rule: DeviceTaintRule) -> tuple[list[str], list[str]]:
    """(errors the server refuses the rule for, warnings it gives and then drops the fields)."""
    errors = [f"{f.path}: Invalid value: {f.reason}" for f in rule.invalid_fields if f.path != "spec.taint.timeAdded"]
    taint = ((raw.get("spec") or {}).get("taint") or {}) if isinstance(raw.get("spec"), dict) else {}
    added = taint.get("timeAdded") if isinstance(taint, dict) else None
    if added is not None and not isinstance(added, datetime) and not _rfc3339(added):
        errors.append(f'spec.taint.timeAdded: Invalid value: "{added}": not an RFC 3339 time '
                      "(2006-01-02T15:04:05Z07:00), which the server cannot decode")
    if not rule.spec.taint.key:
        errors.append("spec.taint.key: Required value")
    effect = rule.spec.taint.effect
    if not effect:
        errors.append("spec.taint.effect: Required value")
    elif effect not in EFFECTS:
        errors.append(f'spec.taint.effect: Unsupported value: "{effect}": supported values: '
                      + ", ".join(f'"{e}"' for e in EFFECTS))
    warnings = [f'unknown field "{path}"' for path in unknown_fields(raw)]
    return errors, warnings
