"""One scan: the pods on this node -> what their cgroups hold -> a NodeEnforcementReport.

The expectation is the same prediction ``kubectl dra explain pod`` prints. Options the user did
not set come from the cgroup tree itself (driver from the kubepods layout, runtime from the
container IDs, huge page sizes from the kernel, the container weight formula from the observed
weights when they are unambiguous), then from the Node object, then defaults.
"""

from __future__ import annotations

from datetime import datetime, timezone

from kubectl_dra import __version__
from kubectl_dra.allocatable.entries import from_status
from kubectl_dra.cgroups import formulas as f
from kubectl_dra.cgroups.options import NodeOptions, option_key, resolve
from kubectl_dra.cgroups.paths import container_cgroup
from kubectl_dra.cgroups.cpumanager import parse_cpuset
from kubectl_dra.cgroups.predict import PodCgroups, predict_pod, static_exclusive
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.verify.compare import ObservedPod, compare_pod, match_verdict, override_evidence
from kubectl_dra.verify.crosscheck import pods_on
from kubectl_dra.verify.report import Divergence, NodeEnforcementReport, PodVerdict, ReportMetadata, ReportStatus
from kubectl_dra.nodescan.cgroupfs import CgroupFS
from kubectl_dra.nodescan.kubeletstate import KubeletState
from kubectl_dra.nodestate.reconcile import NodeDRAState, reconcile

NODE_LABEL = "kubectl-dra.io/node-name"
RUNTIME_SCHEMES = {"containerd": "containerd", "cri-o": "crio"}


def _runtime_from_ids(pods: list[Pod]) -> str | None:
    for pod in pods:
        for status in (*pod.status.container_statuses, *pod.status.init_container_statuses):
            pair = status.runtime_and_id
            if pair and pair[0] in RUNTIME_SCHEMES:
                return RUNTIME_SCHEMES[pair[0]]
    return None


def _observe(fs: CgroupFS, pod: Pod, expected: PodCgroups, options: NodeOptions) -> ObservedPod:
    observed = ObservedPod(pod=fs.read(expected.pod.path, list(expected.pod.files)))
    if observed.pod.error:
        return observed
    for container in expected.containers:
        status = pod.container_status(container.name)
        pair = status.runtime_and_id if status else None
        if pair is None or (status.state and not status.running):
            observed.skipped[container.name] = "not running, so it has no cgroup"
            continue
        runtime = RUNTIME_SCHEMES.get(pair[0], options.runtime)
        path = container_cgroup(expected.pod.path, pair[1], options.cgroup_driver, runtime)
        observed.containers[container.name] = fs.read(path, list(container.files))
    return observed


def _seen(observed: ObservedPod) -> tuple:
    """Everything of a pod's observation a verdict depends on, comparable by value."""
    return (observed.pod.files, observed.pod.error, observed.pod.unreadable, observed.skipped,
            [(name, c.files, c.error, c.unreadable) for name, c in observed.containers.items()])


def _detect_weight_formula(samples: list[tuple[int, str | None]]) -> str | None:
    """The runtime's formula, when every unambiguous container weight agrees on one."""
    votes = {"linear": 0, "quadratic": 0}
    for shares, observed in samples:
        linear, quadratic = f.weight_linear(shares), f.weight_quadratic(shares)
        if observed is None or linear == quadratic:
            continue
        if observed == str(linear):
            votes["linear"] += 1
        elif observed == str(quadratic):
            votes["quadratic"] += 1
    if votes["linear"] and not votes["quadratic"]:
        return "linear"
    if votes["quadratic"] and not votes["linear"]:
        return "quadratic"
    return None


def _detect_runtime_hugetlb(predictions) -> bool | None:
    """Whether the runtime applies container hugepage limits, from the files themselves: a number in
    any container's hugetlb file (the kubelet always sends at least 0) says yes; ``max`` where the
    kubelet sent a number, with no number anywhere, says no (containerd's default)."""
    skipped = False
    for _, _, expected, observed in predictions:
        for container in expected.containers:
            seen = observed.containers.get(container.name)
            if seen is None or seen.error:
                continue
            for file, asked in container.cri_hugepages.items():
                value = seen.files.get(file)
                if value is not None and (value.isascii() and value.isdigit()):
                    return True
                if value == "max" and (asked.isascii() and asked.isdigit()):
                    skipped = True
    return False if skipped else None


def _detect_cpu_manager_policy(predictions, period: int) -> str | None:
    """static when every container the static policy would pin (and its pod) reads ``max``, none when
    they all carry their quota; undecided (None) when there is no such container or they disagree."""
    votes = set()
    for pod, _, expected, observed in predictions:
        candidates = static_exclusive(pod)
        for container in expected.containers:
            seen = observed.containers.get(container.name)
            if container.name not in candidates or seen is None or seen.error:
                continue
            value = seen.files.get("cpu.max")
            if value == f.cpu_max(-1, period):
                votes.add("static")
            elif value == container.files.get("cpu.max") and not value.startswith("max"):
                votes.add("none")
    return votes.pop() if len(votes) == 1 else None


def _kubelet_cpuset(pod: Pod, container: str, options: NodeOptions, state) -> frozenset[int] | None:
    """The cpuset the kubelet gave a container: none under the none policy; its exclusive CPUs or the
    shared pool under static (only known from cpu_manager_state)."""
    if options.cpu_manager_policy == "none":
        return frozenset()
    if state is None:
        return None
    return parse_cpuset(state.exclusive(pod.uid).get(container) or state.default_cpu_set)


def scan(node_name: str, inventory: Inventory, fs: CgroupFS, given: dict[str, object],
         now: datetime | None = None, cache: dict | None = None, proc_root: str | None = None,
         kubelet: KubeletState | None = None, node_dra: NodeDRAState | None = None,
         claims: dict | None = None) -> NodeEnforcementReport:
    """``cache`` (kept by the service between scans) holds predictions by pod UID, resourceVersion and
    options: a pod that did not change is not predicted again. ``kubelet``: what was read from the
    kubelet's root directory (cpu_manager_state), when mounted. ``node_dra``: the node's DRA state
    (checkpoint, CDI, PodResources) and ``claims`` the API's answer for each claim it involves
    (see :func:`kubectl_dra.nodestate.reconcile.reconcile`)."""
    now = now or datetime.now(timezone.utc)
    observed_at = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    pods = pods_on(inventory, node_name)
    node = inventory.get(Node, None, node_name)
    report = NodeEnforcementReport(metadata=ReportMetadata(name=node_name, labels={NODE_LABEL: node_name}),
                                   status=ReportStatus(observed_at=observed_at, agent_version=__version__,
                                                       cgroup_version=fs.version()))
    if node_dra is not None:  # independent of the cgroup version (sandboxes are looked at on v2 only)
        report.status.sources = node_dra.sources
        if node_dra.usable and report.status.cgroup_version != "v2":
            report.status.claims = reconcile(pods, claims or {}, node_dra, now)
    if report.status.cgroup_version != "v2":
        cause, reason = fs.unusable()
        report.status.message = reason
        report.status.pods = [PodVerdict(namespace=p.namespace or "", name=p.name, uid=p.uid, verdict="Unknown",
                                         divergences=[Divergence(scope="pod", file="-", cause=cause,
                                                                 severity="warning", message=reason)])
                              for p in pods]
        return report.summarize()

    state = kubelet.cpu_manager if kubelet else None
    layout: dict[str, object] = {"cgroup_driver": fs.driver(str(given.get("kubelet_cgroup_root", "/"))),
                                 "runtime": _runtime_from_ids(pods), "hugepage_sizes": fs.hugepage_sizes()}
    where = {name: "cgroup tree" for name in layout}
    if state is not None and state.policy_name in ("none", "static"):
        layout["cpu_manager_policy"], where["cpu_manager_policy"] = state.policy_name, kubelet.cpu_manager_source
    options, sources = resolve(given, node, layout, where)

    def exclusive(pod: Pod) -> dict[str, str] | None:
        return state.exclusive(pod.uid) if state is not None else None

    # The verdict holds the node to what the scheduler counted: the recorded node-allocatable amounts,
    # whether or not this kubelet applies them now. A kubelet restarted with DRANodeAllocatableResources
    # off keeps the amounts in cgroups it made before and leaves them out of containers it starts after
    # (seen on a real v1.37.2 kubelet): the first match, the second is KubeletDRADisabled.
    reported_dra = options.kubelet_dra
    options = options.model_copy(update={"kubelet_dra": True})
    options_json = options.model_dump_json()  # part of every cache key: kept in step with ``options``

    def cache_key(pod: Pod) -> tuple | None:
        """Where the prediction for a pod under the current options is kept between scans (None: not kept)."""
        if cache is None or not pod.metadata.resource_version:
            return None
        return pod.uid, pod.metadata.resource_version, options_json, tuple(sorted((exclusive(pod) or {}).items()))

    def predicted(pod: Pod, entries) -> PodCgroups:
        key = cache_key(pod)
        if key is None:
            return predict_pod(pod, entries, options, exclusive(pod))
        if key not in cache:
            cache[key] = predict_pod(pod, entries, options, exclusive(pod))
        return cache[key]

    predictions = []
    for pod in pods:
        entries = [from_status(s) for s in pod.status.node_allocatable_resource_claim_statuses]
        expected = predicted(pod, entries)
        predictions.append((pod, entries, expected, _observe(fs, pod, expected, options)))
    if node_dra is not None and node_dra.usable:
        sandboxes = {pod.uid for pod, _, expected, _ in predictions if fs.runs_processes(expected.pod.path)}
        report.status.claims = reconcile(pods, claims or {}, node_dra, now, sandboxes)

    # what the files themselves show, for what the user did not set (flags win)
    detected: dict[str, object] = {}
    if given.get("weight_formula") is None:
        samples = [(c.shares, obs.containers[c.name].files.get("cpu.weight"))
                   for _, _, expected, obs in predictions for c in expected.containers if c.name in obs.containers]
        detected["weight_formula"] = _detect_weight_formula(samples)
    if given.get("runtime_hugetlb") is None:
        detected["runtime_hugetlb"] = _detect_runtime_hugetlb(predictions)
    if given.get("cpu_manager_policy") is None and state is None:
        detected["cpu_manager_policy"] = _detect_cpu_manager_policy(predictions, options.cpu_cfs_period)
    changes = {k: v for k, v in detected.items() if v is not None}
    if changes:
        for name, value in changes.items():
            sources[option_key(name)] = "cgroup tree"
        if any(getattr(options, name) != value for name, value in changes.items()):
            options = options.model_copy(update=changes)
            options_json = options.model_dump_json()
            predictions = [(p, e, predicted(p, e), o) for p, e, _, o in predictions]

    policy_known = sources.get("cpuManagerPolicy", "default") not in ("default", "cgroup tree")
    no_dra_options = options.model_copy(update={"kubelet_dra": False})
    for pod, entries, expected, observed in predictions:
        key = cache_key(pod)
        seen = _seen(observed) if key is not None else None
        matched = cache.get((*key, "matched")) if key is not None else None
        if matched is not None and matched[0] == seen:
            # the same pod, options, prediction and files as a scan that found nothing: the same verdict
            verdict = match_verdict(pod, expected, observed)
            verdict.expected_hash = matched[1]
            report.status.pods.append(verdict)
            continue
        verdict = compare_pod(pod, expected, None, observed, options)
        no_dra = None
        if verdict.divergences and entries:  # only then does "what without DRA" matter
            no_dra = predict_pod(pod, entries, no_dra_options, exclusive(pod))
            verdict = compare_pod(pod, expected, no_dra, observed, options)
        if policy_known and any(d.cause == "Unexplained" and d.container for d in verdict.divergences):
            evidence = _override_evidence(fs, pod, verdict, observed, options, state)
            if evidence:
                verdict = compare_pod(pod, expected, no_dra, observed, options, evidence)
        if not reported_dra:  # the node itself says why the amount is missing
            for d in verdict.divergences:
                if d.cause in ("KubeletDRADisabled", "DRAAmountMissing"):
                    d.cause, d.severity = "KubeletDRADisabled", "error"
                    d.message = (f"equals the value without the claims' node-allocatable amounts, which the scheduler "
                                 f"counted: this node's kubelet does not apply them ({sources.get('kubeletDra', 'flag')})"
                                 "; cgroups made before it stopped keep them, containers started since lack them")
        verdict.expected_hash = expected.fingerprint()
        if seen is not None and verdict.verdict == "Match" and not verdict.divergences:
            cache[(*key, "matched")] = seen, verdict.expected_hash
        if proc_root and verdict.verdict == "Diverged":
            for name in {d.container for d in verdict.divergences if d.container}:
                if name in observed.containers:
                    verdict.processes[name] = fs.process_names(observed.containers[name].path, proc_root)
        report.status.pods.append(verdict)
    if cache is not None:  # forget pods that left the node or changed
        live = {(p.uid, p.metadata.resource_version) for p in pods}
        for key in [k for k in cache if (k[0], k[1]) not in live]:
            del cache[key]
    report.status.cgroup_driver = options.cgroup_driver
    report.status.runtime = options.runtime
    report.status.weight_formula = options.weight_formula
    report.status.kubelet_dra = reported_dra
    report.status.node_options = options.model_copy(update={"kubelet_dra": reported_dra}).model_dump(
        mode="json", by_alias=True)
    report.status.node_options_source = sources
    return report.summarize()


def _override_evidence(fs: CgroupFS, pod: Pod, verdict, observed: ObservedPod, options: NodeOptions,
                       state) -> dict[str, str]:
    """For containers with unexplained values: whether their cpuset shows that a driver or an NRI
    plugin changed them after the kubelet (read only for those containers)."""
    evidence = {}
    for name in {d.container for d in verdict.divergences if d.cause == "Unexplained" and d.container}:
        seen = observed.containers.get(name)
        cpuset = fs.read(seen.path, ["cpuset.cpus"]).files.get("cpuset.cpus") if seen else None
        found = override_evidence(cpuset, _kubelet_cpuset(pod, name, options, state), policy_known=True)
        if found:
            evidence[name] = found
    return evidence
