"""Findings about one NodeOverlay evaluation: stable codes, each saying what is wrong and what to do next.

The evaluation (``engine.py``) re-does Karpenter's pass and keeps who holds each slot; this module
reads that state and turns it into findings, as ``claims/findings.py`` does for a claim;
``explain.py`` puts both into the result document.
"""

from __future__ import annotations

from collections import defaultdict

from kubectl_dra.document import Finding
from kubectl_dra.overlays.engine import _Evaluation, _Overlay, karpenter_status, karpenter_verdict
from kubectl_dra.overlays.requirements import IN, NEGATIVE
from kubectl_dra.text import plural

_EXAMPLES = 3  # how many slots a message names before "and N more"


def _examples(items: list[str]) -> str:
    shown = "; ".join(items[:_EXAMPLES])
    return shown + (f"; and {len(items) - _EXAMPLES} more" if len(items) > _EXAMPLES else "")


class OverlayFindings:
    """The findings of one evaluation, each saying what is wrong and what to do next."""

    def __init__(self, ev: _Evaluation) -> None:
        self.ev = ev
        self.out: list[Finding] = []

    def add(self, code: str, severity: str, message: str, overlay: str | None = None) -> None:
        self.out.append(Finding(code=code, severity=severity, message=message,
                                object=f"nodeoverlay/{overlay}" if overlay else None))

    def build(self) -> list[Finding]:
        ev = self.ev
        if ev.gate_enabled is False and ev.overlays:
            self.add("OverlayFeatureGateOff", "warning",
                     f"The NodeOverlay feature gate is off, so Karpenter applies none of the "
                     f"{plural(len(ev.overlays), 'NodeOverlay')}: prices and capacity below are the provider's; what the overlays would do is "
                     "under ifEnabled. Turn it on with NodeOverlay=true in the controller's --feature-gates "
                     "(FEATURE_GATES) if they are meant to apply.")
        for ov in ev.overlays:
            if ov.crd_skew:
                self.add("OverlayCRDSkew", "warning",
                         f"NodeOverlay {ov.name} was admitted by this cluster's API server, though Karpenter "
                         f"v1.14.1's CRD refuses it ({'; '.join(ov.crd_skew)}): the cluster's Karpenter CRDs are "
                         "another version. It is evaluated with the v1.14.1 controller's runtime check; upgrading the "
                         "CRDs would refuse the next change to it.", ov.name)
            if ov.status == "RuntimeValidation":
                self.runtime_validation(ov)
            elif ov.status == "Conflict":
                self.conflict(ov)
            elif not ov.matches:
                self.matches_nothing(ov)
            elif ov.won == 0 and ov.lost:
                self.add("OverlayShadowed", "warning",
                         f"NodeOverlay {ov.name} (weight {ov.weight}) has no effect: every price slot, capacity key "
                         f"or driver it matches is already set by {', '.join(sorted(ov.shadowed_by))}, which Karpenter "
                         "processes first. Raise its weight above theirs, or delete it if it is a leftover.",
                         ov.name)
            if ov.dynamic.errors:
                # not OverlayRuntimeValidation: Karpenter does not skip the overlay for this
                self.add("OverlayTemplatesInvalid", "warning",
                         f"NodeOverlay {ov.name}: spec.dynamicResources (proposal, not read by Karpenter today) is "
                         f"invalid and its templates are ignored: {'; '.join(ov.dynamic.errors)}.", ov.name)
        weights = {o.name: o.weight for o in ev.overlays}
        for (loser, winner), details in sorted(ev.undetected.items()):
            w = weights[loser]
            self.add("OverlayConflictUndetected", "warning",
                     f"NodeOverlays {winner} and {loser} both have weight {w} and set the same capacity key to "
                     f"different values on {plural(len(details), 'instance type')} ({_examples(details)}). Karpenter's "
                     "conflict check only compares with the most recently stored overlay's keys, so it reports no "
                     f"conflict and both stay Ready, while {winner} (name sorts later, processed first) silently "
                     "wins. Give them different weights, or remove the key from one of them.", loser)
        self.prices_unknown()
        self.status_disagreements()
        return self.out

    def runtime_validation(self, ov: _Overlay) -> None:
        if ov.schema_invalid:
            self.add("OverlayRuntimeValidation", "error",
                     f"NodeOverlay {ov.name} is invalid: {'; '.join(ov.errors)}. The API server's CRD validation "
                     "would refuse this object, so it can only come from a hand-edited file; fix the spec.", ov.name)
            return
        self.add("OverlayRuntimeValidation", "error",
                 f"Karpenter skips NodeOverlay {ov.name} (ValidationSucceeded=False, reason RuntimeValidation): "
                 f"{'; '.join(ov.errors)}. Fix the listed requirement keys, values or capacity names; nothing of it "
                 "applies until then.", ov.name)

    def conflict(self, ov: _Overlay) -> None:
        by_peer: dict[str, list[str]] = defaultdict(list)
        kinds = set()
        for kind, where, peer in ov.conflict_slots:
            by_peer[peer].append(f"{kind} {where}")
            kinds.add(kind)
        parts = [f"{peer} on {_examples(slots)}" for peer, slots in sorted(by_peer.items())]
        text = (f"NodeOverlay {ov.name} (weight {ov.weight}) conflicts with {'; '.join(parts)}. Both have weight "
                f"{ov.weight}; Karpenter processes equal weights by name, descending, so "
                f"{', '.join(sorted(by_peer))} was stored first and {ov.name} is rejected everywhere (every NodePool "
                f"and instance type; ValidationSucceeded=False, reason Conflict, message 'conflict with another overlay', which does "
                f"not name the peer).")
        in_conflict = {"price", "priceAdjustment"} if "price" in kinds else set()
        dropped = [s for s in ov.sets() if s not in kinds and s not in in_conflict]
        if dropped:
            text += f" Its {', '.join(dropped)}, which conflicts with nothing, is dropped too (rejection is atomic)."
        shadowed = self.shadowed_conflict(ov)
        if shadowed:
            text += (f" The contested slots are already held by higher-weight {', '.join(shadowed)}, so the clash "
                     "changes no price there; Karpenter still rejects the overlay.")
        if ov.template_only_conflict:
            text += " (The clash is only in spec.dynamicResources, an unmerged proposal: today's Karpenter ignores it.)"
        text += " Give one of them a different weight, or narrow their requirements so they do not overlap."
        self.add("OverlayConflict", "error", text, ov.name)

    def shadowed_conflict(self, ov: _Overlay) -> list[str]:
        """Higher-weight holders of every contested price slot (the conflict is between two losers)."""
        if not ov.contested_prices or any(k != "price" for k, _, _ in ov.conflict_slots):
            return []
        holders = set()
        for ci, key in ov.contested_prices:
            winner = self.ev.prices[ci][key].winner
            if winner.weight == ov.weight:
                return []
            holders.add(winner.name)
        return sorted(holders)

    def matches_nothing(self, ov: _Overlay) -> None:
        assert ov.reqs is not None
        ev = self.ev
        reasons = []
        template_keys = {r.key for np in ev.nodepools for r in np.spec.template.spec.requirements}
        for req in ov.reqs:
            if req.operator in NEGATIVE:
                continue
            defined = ev.index.defined.get(req.key)
            if not defined:
                if req.key in template_keys:
                    reasons.append(f"{req.key} appears only in NodePool spec.template.spec.requirements, which "
                                   "overlay matching ignores (it uses spec.template.metadata.labels and "
                                   "karpenter.sh/nodepool); match on karpenter.sh/nodepool or a template label")
                else:
                    reasons.append(f"no instance type or NodePool template label defines {req.key}")
                continue
            if req.operator == IN:
                seen = sorted(v for v, where in ev.index.values.get(req.key, {}).items() if where)
                if not any(ev.index.values.get(req.key, {}).get(v) for v in req.values) and \
                        not ev.index.complement.get(req.key):
                    reasons.append(f"no instance type has {req.key} in {sorted(req.values)} "
                                   f"(values present: {', '.join(seen[:8])}{', ...' if len(seen) > 8 else ''})")
        if not ev.contexts:
            reasons = ["there are no instance types to match (no NodePools, or no catalog entries for them)"]
        if not reasons:
            reasons.append("each requirement matches some instance type, but none matches all of them together "
                           "(or no offering matches its zone / capacity-type requirements)")
        self.add("OverlayMatchesNothing", "warning",
                 f"NodeOverlay {ov.name} matches no instance type in any NodePool, so it does nothing (Karpenter "
                 f"still shows it Ready=True): {'; '.join(reasons)}.", ov.name)

    def prices_unknown(self) -> None:
        unknown = sorted({it.name for it in self.ev.instance_types if not it.prices_known})
        if not unknown:
            return
        inferred = any(it.source == "inferred" for it in self.ev.instance_types)
        uses_price = any(ov.change is not None for ov in self.ev.overlays)
        source = ("they were inferred from the cluster's NodeClaims and Nodes, which carry no prices"
                  if inferred else "the catalog gives no price for some offerings")
        self.add("PricesUnknown", "warning" if uses_price else "info",
                 f"Base prices are unknown for {plural(len(unknown), 'instance type')} ({', '.join(unknown[:5])}"
                 f"{', ...' if len(unknown) > 5 else ''}): {source}. Matching, conflicts and capacity are exact; "
                 "prices show only where an overlay sets an absolute price. Pass an InstanceTypeCatalog "
                 "(--catalog) with the provider's prices to see adjusted prices.")

    def status_disagreements(self) -> None:
        ev = self.ev
        unreconciled = []
        for ov in ev.overlays:
            status = karpenter_status(ov.obj)
            if status is None:
                unreconciled.append(ov.name)
                continue
            verdict = karpenter_verdict(status)
            if verdict is None or verdict == ov.status or (ov.status == "Conflict" and ov.template_only_conflict):
                continue
            generation = ov.obj.metadata.generation
            stale = (status.observed_generation is not None and generation is not None
                     and status.observed_generation < generation)
            causes = []
            if stale:
                causes.append(f"the condition is from generation {status.observed_generation} and the object is at "
                              f"generation {generation}, so Karpenter has not re-evaluated it yet")
            if ev.gate_enabled is False:
                causes.append("the feature gate is off, so this status is left over from when it was on")
            causes.append("the instance types differ from what the provider returns to Karpenter (catalog or "
                          "inferred: zones, capacity types, reserved offerings, labels)")
            causes.append("another overlay or NodePool changed since Karpenter's last reconcile (it re-runs on "
                          "changes and every 6h)")
            self.add("OverlayStatusDisagrees", "warning",
                     f"NodeOverlay {ov.name}: Karpenter's status says {verdict}"
                     f"{': ' + status.message if status.message else ''}, this evaluation gives {ov.status}. "
                     f"Possible causes: {'; '.join(causes)}. Check the catalog against the provider, and the "
                     "Karpenter controller logs for 'nodeoverlay'.", ov.name)
        if unreconciled and ev.gate_enabled is not False and len(unreconciled) == len(ev.overlays):
            self.add("OverlayNotReconciled", "info",
                     f"No NodeOverlay has a Ready condition ({', '.join(unreconciled[:5])}"
                     f"{', ...' if len(unreconciled) > 5 else ''}): Karpenter's nodeoverlay controller has not "
                     "processed them. It only runs with the NodeOverlay feature gate on (off by default); check the "
                     "controller's --feature-gates / FEATURE_GATES.")
