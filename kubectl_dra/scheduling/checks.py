"""What the basic filters (nodename, tainttoleration, nodeaffinity, nodeports, declaredfeatures)
share: which fields of an object could not be read (:func:`unreadable`: such a plugin is
undetermined, never a verdict), the InPlacePodVerticalScalingSchedulerPreemption short cut
(:func:`resize_deferred`; the gate is alpha and off by default in 1.37, so the plugins take it as a
constructor flag) and a rejection with its evidence."""

from __future__ import annotations

from typing import Any

from kubectl_dra.scheduling.framework import SKIP, Evidence, Status


def unreadable(obj: Any, *prefixes: str) -> list[str]:
    """Dropped fields (``KubeObject.invalid_fields``) at, below or *above* any of ``prefixes``: a
    dropped ``spec.affinity`` took ``spec.affinity.nodeAffinity`` with it."""
    if not obj.invalid_fields:
        return []
    return [f.path for f in obj.invalid_fields
            if any(f.path == p or f.path.startswith((p + ".", p + "[")) or p.startswith((f.path + ".", f.path + "["))
                   for p in prefixes)]


def undetermined(plugin: str, whose: str, paths: list[str]) -> Status:
    """This tool cannot decide: ``whose`` fields ``paths`` were dropped as invalid."""
    status = Status.unknown(f"{plugin}: {whose} {', '.join(paths)} could not be read")
    status.plugin = plugin
    return status


def resize_pre_filter(plugin: str, pod: Any) -> Status | None:
    """The PreFilter step the basic plugins share under InPlacePodVerticalScalingSchedulerPreemption
    (alpha, off in 1.37): Skip for a pod whose resize is deferred; "cannot tell" when its conditions
    could not be read; None to go on."""
    bad = unreadable(pod, "status.conditions")
    if bad:
        return undetermined(plugin, "the pod's", bad)
    if resize_deferred(pod):
        status = Status(SKIP)
        status.plugin = plugin
        return status
    return None


def resize_deferred(pod: Any) -> bool:
    """component-helpers ``IsPodResizeDeferred``: the first PodResizePending condition says Deferred."""
    for condition in pod.status.conditions:
        if condition.type == "PodResizePending":
            return condition.reason == "Deferred"
    return False


def rejected(plugin: str, reason: str, detail: str, *, unresolvable: bool) -> Status:
    """``fwk.NewStatus(code, reason)`` with what made it, for a person."""
    status = Status.unschedulable(reason, unresolvable=unresolvable, evidence=[Evidence(reason, detail=detail)])
    status.plugin = plugin
    return status
