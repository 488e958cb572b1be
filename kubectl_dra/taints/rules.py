"""DeviceTaintRules this tool cannot evaluate, and which devices they may taint.

A rule whose own spec did not validate when it was read (a field the model dropped and named in
``invalid_fields``) or whose effect is none of None, NoSchedule, NoExecute is never applied as if it
were valid: a dropped effect taints nothing, a dropped selector field matches every device, a
dropped selector selects none, and each of those is a false verdict ("fits", or an eviction). The
devices such a rule may select are "cannot tell" instead, with the rule and the reason.

What upstream says (docs/kubernetes/dra-apis.md §7): the v1.37 API server requires ``effect`` and
refuses a value other than None, NoSchedule, NoExecute when the effect is set or changed, but the
effect is an open enum ("More effects may get added in the future"), stored objects may carry one a
newer release added, and a component must then treat it like None. Whether the cluster's scheduler
and eviction controller know that newer effect is what this tool cannot know, so an unknown effect
is "cannot tell", not bad input. A rule whose readable effect is None, or that has no selector,
does nothing whatever else is wrong with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_dra.model.resource import DeviceTaintRule
from kubectl_dra.taints.document import TaintView
from kubectl_dra.taints.validation import EFFECTS

Key = tuple[str, str, str]  # driver, pool, device
_SELECTOR_FIELDS = ("driver", "pool", "device")


@dataclass(frozen=True, slots=True)
class UnevaluatedRule:
    """A rule whose effect on the devices it may select is unknown, and why."""

    name: str
    reason: str  # the first field that did not validate, or what is wrong with the effect
    any_device: bool = False  # the selector itself did not validate: it may select any device
    selector: dict[str, str | None] = field(default_factory=dict)  # its readable fields (None: unset)
    wild: frozenset[str] = frozenset()  # selector fields that did not validate: they may match anything

    def may_select(self, key: Key) -> bool:
        if self.any_device:
            return True
        return all(name in self.wild or self.selector.get(name) is None or self.selector[name] == value
                   for name, value in zip(_SELECTOR_FIELDS, key))

    @property
    def message(self) -> str:
        return (f"DeviceTaintRule {self.name} could not be evaluated ({self.reason}): whether it taints the "
                "devices it may select is unknown")


def _bad_paths(rule: DeviceTaintRule, allocation: bool) -> list[str]:
    """The rule's spec fields that did not validate; ``allocation``: what allocation reads (a
    ``timeAdded`` only dates an eviction)."""
    if not rule.invalid_fields:
        return []
    paths = rule.invalid_under("spec")
    return [p for p in paths if not (allocation and p == "spec.taint.timeAdded")]


def unevaluated_rule(rule: DeviceTaintRule, *, allocation: bool = False) -> UnevaluatedRule | None:
    """Why ``rule`` cannot be applied as read, with what is known of its selection; None when it
    can (or when it provably does nothing: a readable effect None, a readable absent selector)."""
    bad = _bad_paths(rule, allocation)
    effect = rule.spec.taint.effect
    effect_unreadable = any(p in ("spec", "spec.taint", "spec.taint.effect") for p in bad)
    if effect == "None" and not effect_unreadable:
        return None
    if bad:
        reason = f"{bad[0]} did not validate"
    elif not effect:
        reason = "spec.taint.effect is not set (the API server requires one)"
    elif effect not in EFFECTS:
        reason = f'spec.taint.effect "{effect}" is none of None, NoSchedule, NoExecute (a newer release may define it)'
    else:
        return None
    any_device = any(p in ("spec", "spec.deviceSelector") for p in bad)
    selector = rule.spec.device_selector
    if selector is None and not any_device:
        return None  # no deviceSelector selects no device
    wild = frozenset(name for name in _SELECTOR_FIELDS if f"spec.deviceSelector.{name}" in bad)
    return UnevaluatedRule(name=rule.name, reason=reason, any_device=any_device,
                           selector={name: getattr(selector, name) for name in _SELECTOR_FIELDS} if selector else {},
                           wild=wild)


def split_rules(rules: list[DeviceTaintRule], *, allocation: bool = False
                ) -> tuple[list[DeviceTaintRule], list[UnevaluatedRule]]:
    """(the rules to apply as read, the rules that cannot be), each list by rule name."""
    applied, unevaluated = [], []
    for rule in sorted(rules, key=lambda r: r.name):
        why = unevaluated_rule(rule, allocation=allocation)
        if why is not None:
            unevaluated.append(why)
        elif not _bad_paths(rule, allocation):
            applied.append(rule)  # (a rule with a readable effect None and a bad field does nothing)
    return applied, unevaluated


def first_unknown(unevaluated: list[UnevaluatedRule], key: Key) -> UnevaluatedRule | None:
    """The first rule that cannot be evaluated and may select the device ``key``."""
    return next((rule for rule in unevaluated if rule.may_select(key)), None)


@dataclass(slots=True)
class RuleTaints:
    """What DeviceTaintRules do to new allocations: per device the taints of the rules that keep
    allocations off (NoSchedule, NoExecute), and the rules whose effect on a device is unknown."""

    taints: dict[Key, list[TaintView]] = field(default_factory=dict)
    unevaluated: list[UnevaluatedRule] = field(default_factory=list)

    def unknown(self, key: Key) -> UnevaluatedRule | None:
        return first_unknown(self.unevaluated, key)
