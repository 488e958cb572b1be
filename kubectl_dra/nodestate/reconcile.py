"""The node's view of DRA claims (what the kubelet prepared) against the API's (who the claims are
reserved for, which pods run here): one entry per claim that either side puts on this node.

Nothing is concluded from a source that could not be read: a corrupt checkpoint yields
``CheckpointCorrupt`` and no other checkpoint finding, a claim the API did not answer for is
compared with nothing, and an empty PodResources reply proves nothing unless the kubelet fills
``dynamic_resources`` for some pod. Pods are the node's complete list (a field-selected list), so a
pod UID that is not among them is gone from this node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kubectl_dra.model.claim import is_reserved_for_pod
from kubectl_dra.document import Finding
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.claim import ResourceClaim
from kubectl_dra.nodestate.cdi import CDIIndex
from kubectl_dra.nodestate.checkpoint import DRACheckpoint, PreparedClaim
from kubectl_dra.nodestate.podresources import PodResourcesView
from kubectl_dra.verify.report import ClaimOnNode, NodeSource

Key = tuple[str, str]  # (namespace, name)
UNREAD = object()  # the API's answer for a claim that could not be read
# A deleted pod's deletionTimestamp is the end of its grace period; the kubelet then unprepares its claims
# and the pod goes away within seconds (a real v1.37.2 kubelet: 21 s after a stopped plugin came back)
UNPREPARE_SLACK = timedelta(seconds=30)


@dataclass
class NodeDRAState:
    """What the agent read on the node; each part None when its source gave nothing usable."""

    sources: list[NodeSource] = field(default_factory=list)
    checkpoint: DRACheckpoint | None = None
    checkpoint_corrupt: str | None = None  # why, when the file is there but not a checkpoint
    checkpoint_path: str = ""
    cdi: CDIIndex | None = None
    pod_resources: PodResourcesView | None = None

    @property
    def usable(self) -> bool:
        """Whether anything says what the kubelet prepared (CDI specs alone say nothing of claims)."""
        return self.checkpoint is not None or self.checkpoint_corrupt is not None or self.pod_resources is not None


def _pod_label(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def _running(pod: Pod) -> bool:
    return pod.status.phase == "Running"


class _Entries:
    def __init__(self):
        self.by_key: dict[Key, ClaimOnNode] = {}
        self.said: set[tuple] = set()

    def get(self, key: Key) -> ClaimOnNode:
        if key not in self.by_key:
            self.by_key[key] = ClaimOnNode(namespace=key[0], name=key[1], uid="")
        return self.by_key[key]

    def say(self, key: Key, code: str, severity: str, message: str, *about) -> None:
        if (key, code, *about) in self.said:  # one finding per claim, code and subject, whichever source saw it
            return
        self.said.add((key, code, *about))
        self.get(key).findings.append(Finding(code=code, severity=severity, message=message))


def expected_claims(pods: list[Pod]) -> dict[Key, list[Pod]]:
    """Claims the API puts on this node: every ResourceClaim a pod here references (template claims
    once made), with the pods that use it."""
    wanted: dict[Key, list[Pod]] = {}
    for pod in pods:
        for name in pod.referenced_claim_names().values():
            if name:
                wanted.setdefault((pod.namespace or "", name), []).append(pod)
    return wanted


def claim_keys_to_read(pods: list[Pod], state: NodeDRAState) -> list[Key]:
    """Which claims the agent must ask the API about: those its pods use and those the node holds."""
    keys = set(expected_claims(pods))
    if state.checkpoint is not None:
        keys |= {(c.namespace, c.name) for c in state.checkpoint.claims}
    if state.pod_resources is not None:
        keys |= {(r.claim_namespace, r.claim_name) for r in state.pod_resources.rows}
    return sorted(keys)


def reconcile(pods: list[Pod], claims: dict[Key, ResourceClaim | None], state: NodeDRAState,
              now: datetime | None = None, sandboxes: set[str] | None = None) -> list[ClaimOnNode]:
    """``claims``: the API's answer per claim key (None: it does not exist; a key absent: it could
    not be read). ``now``: when the node was read (without it, nothing is concluded from how long a
    deleted pod has been terminating). ``sandboxes``: UIDs of the pods whose sandbox runs on the
    node (a process in the pod's cgroup); None when that was not looked at."""
    entries = _Entries()
    by_uid = {pod.uid: pod for pod in pods}
    by_name = {(pod.namespace or "", pod.name): pod for pod in pods}
    wanted = expected_claims(pods)

    for key, users in wanted.items():
        entry = entries.get(key)
        entry.pods = sorted({_pod_label(p) for p in users})
        api = claims.get(key, UNREAD)
        if isinstance(api, ResourceClaim):
            entry.uid = api.uid  # before the node's sources: the API's UID names a claim the pods use

    if state.checkpoint_corrupt is not None:
        for key in wanted:
            entries.say(key, "CheckpointCorrupt", "error",
                        f"the kubelet's DRA checkpoint {state.checkpoint_path} is corrupt ({state.checkpoint_corrupt}): "
                        "whether this claim is prepared cannot be told, and the kubelet does not start again with "
                        "this file (\"failed to run Kubelet: create ResourceClaim cache: GetOrCreate() on checkpoint "
                        "state: failed to get checkpoint dra_manager_state: checkpoint is corrupted\"), so the node "
                        "goes NotReady at its next restart. Without the file it starts with no claim prepared: "
                        "running pods keep their devices, but a container of theirs that restarts fails "
                        "(CreateContainerConfigError \"unable to get claim info for ResourceClaim\"). Next: drain "
                        "the node, remove the file, then restart the kubelet")
    if state.checkpoint is not None:
        _from_checkpoint(state.checkpoint, state, claims, by_uid, wanted, entries, now, sandboxes)
    if state.pod_resources is not None:
        _from_pod_resources(state.pod_resources, state, claims, by_name, wanted, entries, sandboxes)
    for key, entry in entries.by_key.items():
        api = claims.get(key, UNREAD)
        if entry.uid == "" and isinstance(api, ResourceClaim):
            entry.uid = api.uid
        entry.api = "unread" if api is UNREAD else ("missing" if api is None else "read")
    return [entries.by_key[k] for k in sorted(entries.by_key)]


def _cdi_findings(key: Key, device: str, cdi_ids, index: CDIIndex | None, entries: _Entries,
                  live: bool | None = None) -> None:
    """``live``: whether a pod holding the claim has a running sandbox on the node (None: not known,
    taken as yes). The kubelet calls NodePrepareResources only when it creates a pod's sandbox, and
    only for a claim it has not prepared in its current run (pkg/kubelet/kuberuntime SyncPod,
    cm/dra claiminfo ``prepared``, v1.37.2): a spec missing under a running sandbox stays missing, one
    missing while no sandbox runs (a reboot emptied /var/run/cdi) is rewritten as the kubelet starts
    the pods again, as seen on a real node."""
    if index is None:
        return
    for cdi_id in cdi_ids:
        why = index.why_unresolved(cdi_id)
        if why is None:
            continue
        if live is False:
            entries.say(key, "CDIDeviceMissing", "info",
                        f"prepared device {device} is injected as CDI device {cdi_id}, which does not resolve: {why}. "
                        "No pod of this claim has a running sandbox on this node, as while the kubelet starts pods "
                        "again after a reboot emptied /var/run/cdi: when it creates the sandbox after its own restart "
                        "it calls NodePrepareResources, and the driver writes the spec again. Only if the kubelet "
                        "kept running (it prepares a claim once per run) does the pod's start fail with "
                        "\"CDI device injection failed: unresolvable CDI devices\"; then delete the pod", cdi_id)
            continue
        entries.say(key, "CDIDeviceMissing", "error",
                    f"prepared device {device} is injected as CDI device {cdi_id}, which does not resolve: {why}. "
                    "A pod of this claim runs here, and the kubelet prepares a claim only when it creates a pod's "
                    "sandbox, once per run of its own: starting or restarting a container that uses it fails with "
                    "CreateContainerError (\"CDI device injection failed: unresolvable CDI devices\"). Next: delete "
                    "the pods that use the claim so they are created again and it is prepared anew (or restart the "
                    "driver's kubelet plugin, if it is one that rewrites its specs when it starts)", cdi_id)


def _reserved_verdict(key: Key, prepared_uid: str, pod: Pod, api, entries: _Entries, source: str) -> None:
    """PreparedNotReserved when the API answered and does not reserve this claim for the pod."""
    if api is UNREAD:
        return
    label = _pod_label(pod)
    if api is None or (prepared_uid and api.uid != prepared_uid):
        now = "no longer exists" if api is None else f"was replaced (the API's claim has UID {api.uid})"
        entries.say(key, "PreparedNotReserved", "warning" if pod.is_done else "error",
                    f"{source} holds this claim (UID {prepared_uid or 'unknown'}) prepared for pod {label}, but that "
                    f"claim {now}: the pod keeps devices that the scheduler may give to another claim. Next: delete "
                    f"pod {label} so the kubelet unprepares them", pod.uid)
        return
    if not is_reserved_for_pod(api, pod):
        entries.say(key, "PreparedNotReserved", "warning" if pod.is_done else "error",
                    f"{source} holds this claim prepared for pod {label}, but status.reservedFor does not list it: "
                    "the claim can be deallocated and its devices given to another pod while this one still uses "
                    f"them. Next: check the resourceclaim controller; if pod {label} should not run, delete it",
                    pod.uid)


def _unprepare_blocked(key: Key, claim: PreparedClaim, pod: Pod, now: datetime | None, entries: _Entries) -> None:
    """A deleted pod whose containers have stopped, well past its grace period, for which the kubelet
    still holds the claim prepared: NodeUnprepareResources keeps failing (on a real kubelet: pod
    Terminating in phase Running, \"unprepare dynamic resources: DRA driver X is not registered\")."""
    deleted = pod.metadata.deletion_timestamp
    if deleted is None or now is None or now < deleted + UNPREPARE_SLACK:
        return
    if any(s.running for s in (*pod.status.container_statuses, *pod.status.init_container_statuses)):
        return
    drivers = ", ".join(sorted({d.driver for d in claim.devices} | set(claim.drivers))) or "its driver"
    label = _pod_label(pod)
    entries.say(key, "UnprepareBlocked", "error",
                f"pod {label} was deleted and its containers have stopped, but {int((now - deleted).total_seconds())}s "
                f"after its grace period ended the kubelet's checkpoint still holds this claim (UID {claim.uid}) "
                "prepared for it: NodeUnprepareResources has not succeeded, so the pod stays Terminating and the claim "
                "stays reserved, its devices kept from other pods. The kubelet logs \"unprepare dynamic resources: "
                f"DRA driver {drivers} is not registered\" while the driver's kubelet plugin is down. Next: start the "
                f"driver's kubelet plugin on this node (or fix it); the kubelet then unprepares the claim and pod "
                f"{label} goes away", pod.uid)


def _live(uids, sandboxes: set[str] | None) -> bool | None:
    return None if sandboxes is None else bool(set(uids) & sandboxes)


def _from_checkpoint(checkpoint: DRACheckpoint, state: NodeDRAState, claims, by_uid, wanted, entries: _Entries,
                     now: datetime | None = None, sandboxes: set[str] | None = None):
    prepared: dict[Key, list[PreparedClaim]] = {}
    for claim in checkpoint.claims:
        key = (claim.namespace, claim.name)
        prepared.setdefault(key, []).append(claim)
        entry = entries.get(key)
        entry.uid = entry.uid or claim.uid
        api = claims.get(key, UNREAD)
        # prepared means: the claim the API has now (an older object of the same name does not count)
        entry.prepared = True if not isinstance(api, ResourceClaim) or api.uid == claim.uid else bool(entry.prepared)
        entry.prepared_for = sorted({_pod_label(by_uid[u]) if u in by_uid else u for u in claim.pod_uids}
                                    | set(entry.prepared_for))
        entry.devices = sorted({d.key for d in claim.devices} | set(entry.devices))
        entry.cdi_devices = sorted({i for d in claim.devices for i in d.cdi_ids} | set(entry.cdi_devices))
        entry.sources = sorted({*entry.sources, "checkpoint"})
        for uid in sorted(claim.pod_uids):
            pod = by_uid.get(uid)
            if pod is None:
                entries.say(key, "PreparedForGonePod", "warning",
                            f"the kubelet's checkpoint still holds this claim (UID {claim.uid}) prepared for pod UID "
                            f"{uid}, which is no longer on this node: the kubelet has not unprepared it, so its "
                            "devices stay in use here. Expected for a few seconds after a pod is deleted; if it "
                            "persists, look for NodeUnprepareResources errors in the kubelet's log and check that "
                            "the driver's kubelet plugin is registered", uid)
            else:
                _reserved_verdict(key, claim.uid, pod, api, entries, "the kubelet's checkpoint")
                _unprepare_blocked(key, claim, pod, now, entries)
        live = _live({*claim.pod_uids, *(p.uid for p in wanted.get(key, ()))}, sandboxes)
        for device in claim.devices:
            _cdi_findings(key, device.key, device.cdi_ids, state.cdi, entries, live)
    for key, users in wanted.items():
        api = claims.get(key, UNREAD)
        uid = api.uid if isinstance(api, ResourceClaim) else None
        held = [c for c in prepared.get(key, ()) if uid is None or c.uid == uid]
        for pod in users:
            if not _running(pod) or any(pod.uid in c.pod_uids for c in held):
                continue
            entries.get(key).prepared = entries.get(key).prepared or False
            entries.say(key, "ReservedNotPrepared", "error",
                        f"pod {_pod_label(pod)} is running and uses this claim, but the kubelet's checkpoint has no "
                        "preparation of it for that pod: its containers may run without the claim's devices, or the "
                        "kubelet's state was lost (a wiped /var/lib/kubelet, a removed checkpoint). A container of "
                        "it that restarts then fails (CreateContainerConfigError \"unable to get claim info for "
                        "ResourceClaim\"). Next: look for NodePrepareResources in the kubelet's log, then delete pod "
                        f"{_pod_label(pod)} so it is created again and its claims prepared", pod.uid)


def _from_pod_resources(view: PodResourcesView, state: NodeDRAState, claims, by_name, wanted, entries: _Entries,
                        sandboxes: set[str] | None = None):
    held: dict[tuple[str, str, str, str], set[str]] = {}  # (pod ns, pod name, claim ns, claim name) -> containers
    for row in view.rows:
        key = (row.claim_namespace, row.claim_name)
        held.setdefault((row.pod_namespace, row.pod_name, *key), set()).add(row.container)
        entry = entries.get(key)
        entry.prepared = True
        entry.sources = sorted({*entry.sources, "podResources"})
        if row.driver:
            entry.devices = sorted({*entry.devices, row.device_key})
        entry.cdi_devices = sorted({*entry.cdi_devices, *row.cdi_ids})
        pod = by_name.get((row.pod_namespace, row.pod_name))
        if pod is not None:
            entry.prepared_for = sorted({*entry.prepared_for, _pod_label(pod)})
            _reserved_verdict(key, "", pod, claims.get(key, UNREAD), entries, "the kubelet's PodResources API")
        holders = {*(p.uid for p in wanted.get(key, ())), *((pod.uid,) if pod is not None else ())}
        _cdi_findings(key, row.device_key, row.cdi_ids, state.cdi, entries, _live(holders, sandboxes))
    if state.checkpoint is not None or state.checkpoint_corrupt is not None or not view.reports_dynamic_resources:
        return  # the checkpoint is the better witness; or this kubelet reports no claims at all
    for key, users in wanted.items():
        for pod in users:
            if not _running(pod) or (pod.namespace or "", pod.name) not in view.pods:
                continue
            using = set(pod.containers_using_object(key[1]))
            shown = held.get((pod.namespace or "", pod.name, *key), set())
            missing = sorted(c for c in using if c not in shown and (s := pod.container_status(c)) and s.running)
            if missing:
                entries.get(key).prepared = entries.get(key).prepared or False
                entries.say(key, "ReservedNotPrepared", "error",
                            f"pod {_pod_label(pod)} is running and its container(s) {', '.join(missing)} use this "
                            "claim, but the kubelet's PodResources API lists no device of it for them: they may run "
                            "without the claim's devices. Next: look for NodePrepareResources in the kubelet's log, "
                            f"then restart pod {_pod_label(pod)}", pod.uid)
