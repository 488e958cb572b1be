"""One scan: the pods on this node -> what their cgroups hold -> a NodeEnforcementReport.

The expectation is the same prediction ``kubectl dra explain pod`` prints. Options the user did
not set come from the cgroup tree itself (driver from the kubepods layout, runtime from the
container IDs, huge page sizes from the kernel, the container weight formula from the observed
weights when they are unambiguous), then from the Node object, then defaults.
"""

from __future__ import annotations

from datetime import datetime, timezone

from kubectl_dra.allocatable.entries import from_status
from kubectl_dra.cgroups import formulas as f
from kubectl_dra.cgroups.options import NodeOptions, resolve
from kubectl_dra.cgroups.paths import container_cgroup
from kubectl_dra.cgroups.predict import PodCgroups, predict_pod
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.verify.compare import ObservedPod, compare_pod
from kubectl_dra.verify.crosscheck import pods_on
from kubectl_dra.verify.report import Divergence, NodeEnforcementReport, PodVerdict, ReportMetadata, ReportStatus
from node_agent.cgroupfs import CgroupFS

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


def scan(node_name: str, inventory: Inventory, fs: CgroupFS, given: dict[str, object],
         now: datetime | None = None, cache: dict | None = None, proc_root: str | None = None) -> NodeEnforcementReport:
    """``cache`` (kept by the service between scans) holds predictions by pod UID, resourceVersion and
    options: a pod that did not change is not predicted again."""
    observed_at = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pods = pods_on(inventory, node_name)
    node = inventory.get(Node, None, node_name)
    report = NodeEnforcementReport(metadata=ReportMetadata(name=node_name, labels={NODE_LABEL: node_name}),
                                   status=ReportStatus(observed_at=observed_at, cgroup_version=fs.version()))
    if report.status.cgroup_version != "v2":
        reason = {"hybrid": "this node runs cgroup v1 controllers (hybrid mode); only cgroup v2 is supported",
                  "v1": "this node runs cgroup v1; only cgroup v2 is supported",
                  "missing": f"{fs.root} does not exist (mount the host's /sys/fs/cgroup there)"}.get(
            report.status.cgroup_version, f"{fs.root} is not a cgroup v2 mount")
        report.status.message = reason
        report.status.pods = [PodVerdict(namespace=p.namespace or "", name=p.name, uid=p.uid, verdict="Unknown",
                                         divergences=[Divergence(scope="pod", file="-", cause="CgroupUnsupported",
                                                                 severity="warning", message=reason)])
                              for p in pods]
        return report.summarize()

    layout = {"cgroup_driver": fs.driver(str(given.get("kubelet_cgroup_root", "/"))),
              "runtime": _runtime_from_ids(pods), "hugepage_sizes": fs.hugepage_sizes()}
    options, _ = resolve(given, node, layout)

    def predicted(pod: Pod, entries, opts: NodeOptions) -> PodCgroups:
        if cache is None or not pod.metadata.resource_version:
            return predict_pod(pod, entries, opts)
        key = (pod.uid, pod.metadata.resource_version, opts.model_dump_json())
        if key not in cache:
            cache[key] = predict_pod(pod, entries, opts)
        return cache[key]

    predictions = []
    for pod in pods:
        entries = [from_status(s) for s in pod.status.node_allocatable_resource_claim_statuses]
        expected = predicted(pod, entries, options)
        predictions.append((pod, entries, expected, _observe(fs, pod, expected, options)))

    if given.get("weight_formula") is None:
        samples = [(c.shares, obs.containers[c.name].files.get("cpu.weight"))
                   for _, _, expected, obs in predictions for c in expected.containers if c.name in obs.containers]
        detected = _detect_weight_formula(samples)
        if detected and detected != options.weight_formula:
            options = options.model_copy(update={"weight_formula": detected})
            predictions = [(p, e, predicted(p, e, options), o) for p, e, _, o in predictions]

    no_dra_options = options.model_copy(update={"kubelet_dra": False})
    for pod, entries, expected, observed in predictions:
        verdict = compare_pod(pod, expected, None, observed, options)
        if verdict.divergences and entries:  # only then does "what without DRA" matter
            verdict = compare_pod(pod, expected, predict_pod(pod, entries, no_dra_options), observed, options)
        verdict.expected_hash = expected.fingerprint()
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
    report.status.kubelet_dra = options.kubelet_dra
    report.status.node_options = options.model_dump(mode="json", by_alias=True)
    return report.summarize()
