"""Which NodeOverlays Karpenter refuses, with messages worded the way Karpenter words them.

Two layers: what the CRD schema (OpenAPI + CEL, karpenter.sh_nodeoverlays.yaml at v1.14.1) rejects
at admission, which can only show up in a hand-written snapshot, in the API server's words; and what
the controller's ``RuntimeValidate`` rejects on an object the API server admitted (status reason
``RuntimeValidation``). Rules both enforce are the CRD's: such an object never reaches the
controller (the real API server refused every one of them, tests/karpenter/test_overlay_oracle.py),
so only what the CRD lets through can ever be a RuntimeValidation.
"""

from __future__ import annotations

import re

from kubectl_dra.labels import label_value_errors, qualified_name_errors
from kubectl_dra.model.karpenter import NodeOverlay, NodeSelectorRequirement
from kubectl_dra.overlays.requirements import (
    BOUND_OPERATORS, CAPACITY_TYPE, HOSTNAME, IN, NODEPOOL, NOT_IN, OPERATORS, WELL_KNOWN_LABELS, normalize_key,
    parse_int,
)

MAX_REQUIREMENTS = 100
MAX_KEY_LENGTH = 316
MIN_WEIGHT, MAX_WEIGHT = 1, 10000
RESTRICTED_DOMAINS = ("karpenter.sh",)
RESTRICTED_LABELS = frozenset({HOSTNAME})
WELL_KNOWN_VALUES = {CAPACITY_TYPE: ("on-demand", "spot", "reserved")}
WELL_KNOWN_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")

PRICE = re.compile(r"\d+(\.\d+)?", re.ASCII)
# the CRD's pattern for a requirement key, and the words the API server refuses the CEL rules with
KEY_PATTERN = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
               r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_KEY = re.compile(KEY_PATTERN)
CRD_OPERATORS = ("Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")  # the enum, in its order
PRICE_ADJUSTMENT = re.compile(
    r"[+-]\d*\.?\d+"          # signed absolute delta, any size
    r"|\+\d*\.?\d+%"          # any positive percentage
    r"|-\d{1,2}(\.\d+)?%"     # a negative percentage below 100
    r"|-100%",                # or exactly -100%
    re.ASCII,
)

def restricted_label_error(key: str) -> str | None:
    """Karpenter ``IsRestrictedLabel``: the karpenter.sh domain and the hostname label are reserved."""
    if key in WELL_KNOWN_LABELS:
        return None
    domain = key.split("/", 1)[0] if "/" in key else ""
    if key in RESTRICTED_LABELS or any(domain == d or domain.endswith("." + d) for d in RESTRICTED_DOMAINS):
        return (f"using label {key} is not allowed as it might interfere with the internal provisioning logic; "
                f"specify a well known label: [{' '.join(sorted(WELL_KNOWN_LABELS))}], or a custom label that "
                f"does not use a restricted domain: [{' '.join(RESTRICTED_DOMAINS)}]")
    return None


def requirement_errors(req: NodeSelectorRequirement) -> list[str]:
    """Karpenter ``ValidateRequirement`` for one requirement, checks in Karpenter's order."""
    key = normalize_key(req.key)
    errors = []
    if req.operator not in OPERATORS:
        errors.append(f"key {key} has an unsupported operator {req.operator} not in [{' '.join(OPERATORS)}]")
    restricted = restricted_label_error(key)
    if restricted:
        errors.append(restricted)
    known = WELL_KNOWN_VALUES.get(key)
    if known and req.operator == IN and req.values and not any(v in known for v in req.values):
        errors.append(f"no valid values found in [{' '.join(req.values)}] for {key}, expected one of: "
                      f"[{' '.join(known)}], got: [{' '.join(req.values)}]")
    errors.extend(f"key {key} is not a qualified name, {e}"
                  for e in qualified_name_errors(key, what="a qualified name", unit="characters"))
    for value in req.values:
        errors.extend(f"invalid value {value} for key {key}, {e}"
                      for e in label_value_errors(value, unit="characters"))
    if req.operator in (IN, NOT_IN) and not req.values:
        errors.append(f"key {key} with operator {req.operator} must have a value defined")
    if req.operator in BOUND_OPERATORS:
        number = parse_int(req.values[0]) if len(req.values) == 1 else None
        if number is None or number < 0:
            errors.append(f"key {key} with operator {req.operator} must have a single positive integer value")
    return errors


def runtime_errors(overlay: NodeOverlay) -> list[str]:
    """What ``NodeOverlay.RuntimeValidate`` reports: one entry per bad requirement or capacity key."""
    errors = []
    for req in overlay.spec.requirements or ():
        problems = requirement_errors(req)
        if problems:
            errors.append(f"invalid value: {'; '.join(problems)} in requirements, restricted")
    for name in overlay.spec.capacity:
        if name in WELL_KNOWN_RESOURCES:
            errors.append(f"invalid capacity: {name} in resource, restricted")
    return errors


def schema_errors(overlay: NodeOverlay) -> list[str]:
    """What the CRD rejects at admission and the runtime check does not repeat."""
    spec = overlay.spec
    errors = []
    if spec.requirements is None:
        errors.append("spec.requirements: Required value")
    elif len(spec.requirements) > MAX_REQUIREMENTS:
        errors.append(f"spec.requirements: Too many: {len(spec.requirements)}: must have at most "
                      f"{MAX_REQUIREMENTS} items")
    # a requirement the view could not read (a value that is not text...) was dropped: matching
    # without it would be a guess, and the CRD rejects it anyway
    errors.extend(f"{f.path}: {f.reason}" for f in overlay.invalid_fields
                  if f.path == "spec.requirements" or f.path.startswith(("spec.requirements[", "spec.requirements.")))
    bound_rule, kinds = False, set()
    for i, req in enumerate(spec.requirements or ()):
        at = f"spec.requirements[{i}]"
        if len(req.key) > MAX_KEY_LENGTH:
            errors.append(f"{at}.key: Too long: may not be more than {MAX_KEY_LENGTH} bytes")
        elif not _KEY.fullmatch(req.key):
            errors.append(f'{at}.key: Invalid value: "{req.key}": {at}.key in body should match \'{KEY_PATTERN}\'')
        elif req.key not in (CAPACITY_TYPE, NODEPOOL) and \
                req.key.split("/", 1)[0].endswith("karpenter.sh"):  # the rule's own test: a suffix, not a domain
            errors.append(f'{at}.key: Invalid value: "{req.key}": label domain "karpenter.sh" is restricted')
        elif req.key == HOSTNAME:
            errors.append(f'{at}.key: Invalid value: "{req.key}": label "{HOSTNAME}" is restricted')
        if req.operator not in CRD_OPERATORS:
            errors.append(f'{at}.operator: Unsupported value: "{req.operator}": supported values: '
                          + ", ".join(f'"{o}"' for o in CRD_OPERATORS))
        elif req.operator in (IN, NOT_IN) and not req.values:
            kinds.add(req.operator)
        elif req.operator in BOUND_OPERATORS:
            number = parse_int(req.values[0]) if len(req.values) == 1 else None
            bound_rule = bound_rule or number is None or number < 0
    for operator in (NOT_IN, IN):  # the CRD's rules on the list, in its order
        if operator in kinds:
            errors.append(f"spec.requirements: Invalid value: requirements with operator '{operator}' must have a "
                          "value defined")
    if bound_rule:
        errors.append("spec.requirements: Invalid value: requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have "
                      "a single positive integer value")
    if any(name in WELL_KNOWN_RESOURCES for name in spec.capacity):
        errors.append("spec.capacity: Invalid value: invalid resource restricted")
    if spec.price is not None and not PRICE.fullmatch(spec.price):
        errors.append(f'spec.price: Invalid value: "{spec.price}": spec.price in body should match '
                      f"'^\\d+(\\.\\d+)?$'")
    if spec.price_adjustment is not None and not PRICE_ADJUSTMENT.fullmatch(spec.price_adjustment):
        errors.append(f'spec.priceAdjustment: Invalid value: "{spec.price_adjustment}": must be a signed '
                      "amount (+0.5, -129), a positive percentage (+10%) or a negative percentage from -0% to -100%")
    if spec.price is not None and spec.price_adjustment is not None:
        errors.append("spec: Invalid value: cannot set both 'price' and 'priceAdjustment'")
    if spec.weight is not None and not MIN_WEIGHT <= spec.weight <= MAX_WEIGHT:
        errors.append(f"spec.weight: Invalid value: {spec.weight}: spec.weight in body should be "
                      f"{'greater than or equal to 1' if spec.weight < MIN_WEIGHT else 'less than or equal to 10000'}")
    return errors


def validate_overlay(overlay: NodeOverlay) -> list[str]:
    """Why Karpenter would not apply this overlay: the API server's refusal, or else the runtime's."""
    return schema_errors(overlay) or runtime_errors(overlay)
