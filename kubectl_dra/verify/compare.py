"""Compare what a node's cgroups hold with the prediction, within the documented tolerances, and
name a cause for every difference (docs/kubernetes/kubelet-cgroups.md §3.4).

Tolerances (not divergences): systemd rounds a quota up to 10 ms per second; the kernel keeps
memory limits in whole pages and hugetlb limits in whole huge pages; a kernel without the
reservation files has no ``hugetlb.*.rsvd.max``.
"""

from __future__ import annotations

import dataclasses
import functools

from kubectl_dra.cgroups import formulas as f
from kubectl_dra.cgroups.cpumanager import parse_cpuset
from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.cgroups.predict import PodCgroups
from kubectl_dra.document import part
from kubectl_dra.model.pod import Pod
from kubectl_dra.verify.report import Divergence, PodVerdict

SEVERITY = {"KubeletDRADisabled": "error", "DRAAmountMissing": "error", "Unexplained": "warning",
            "PodLevelResources": "warning", "CgroupMissing": "warning", "CgroupUnreadable": "warning",
            "InvalidField": "warning", "DriverOverride": "info", "RuntimeHugetlbDisabled": "info",
            "WeightFormula": "info", "ResizePending": "info"}
RESIZE_CONDITIONS = ("PodResizePending", "PodResizeInProgress")


@part
class ObservedCgroup:
    path: str
    files: dict[str, str | None] = dataclasses.field(default_factory=dict)  # None: the file does not exist
    error: str | None = None  # the directory could not be opened
    error_cause: str = "CgroupMissing"  # CgroupUnreadable when it exists but could not be opened
    unreadable: dict[str, str] = dataclasses.field(default_factory=dict)  # file -> why it could not be read


@part
class ObservedPod:
    pod: ObservedCgroup
    containers: dict[str, ObservedCgroup] = dataclasses.field(default_factory=dict)
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)  # container -> why it was not read


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and _digits(text) else None  # kernel files hold plain digits


def _digits(text: str) -> bool:
    """ASCII digits only: str.isdigit() also takes "²", which int() refuses (found by fuzzing)."""
    return text.isascii() and text.isdigit()


@functools.lru_cache(maxsize=64)
def _hugepage_size(file: str) -> int | None:
    """``hugetlb.2MB.max`` -> 2097152."""
    parts = file.split(".")
    if len(parts) < 3:
        return None
    name = parts[1]
    units = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40, "B": 1}
    for unit in ("KB", "MB", "GB", "TB", "B"):
        if name.endswith(unit) and (name[: -len(unit)].isascii() and name[: -len(unit)].isdigit()):
            return int(name[: -len(unit)]) * units[unit]
    return None


def equivalent(file: str, expected: str, observed: str | None, options: NodeOptions) -> bool:
    """``observed`` is what the kernel shows after writing ``expected`` (with tolerances)."""
    if observed is None:
        return file.endswith(".rsvd.max")  # kernels before 5.7 have no reservation files
    if expected == observed:
        return True
    if file == "cpu.max":
        exp, obs = expected.split(), observed.split()
        if len(exp) != 2 or len(obs) != 2 or exp[1] != obs[1] or "max" in (exp[0], obs[0]):
            return False
        q_exp, q_obs, period = _int(exp[0]), _int(obs[0]), _int(exp[1])
        if None in (q_exp, q_obs, period):
            return False
        return options.cgroup_driver == "systemd" and q_obs == f.systemd_rounded_quota(q_exp, period)
    if file.startswith("memory."):
        exp, obs = _int(expected), _int(observed)
        return exp is not None and obs is not None and obs == f.page_rounded(exp)
    if file.startswith("hugetlb."):
        exp, obs, size = _int(expected), _int(observed), _hugepage_size(file)
        return exp is not None and obs is not None and size is not None and obs == exp // size * size
    return False


def readable(file: str, observed: str) -> bool:
    """Whether a file's content has the kernel's format at all (garbage is not a divergence)."""
    if file == "cpu.max":
        parts = observed.split()
        return len(parts) == 2 and (parts[0] == "max" or _digits(parts[0])) and _digits(parts[1])
    if file.startswith(("memory.", "hugetlb.")):
        return observed == "max" or (observed.isascii() and observed.isdigit())
    if file == "cpu.weight":
        return (observed.isascii() and observed.isdigit())
    return True


UNKNOWN_CAUSES = ("CgroupMissing", "CgroupUnreadable", "CgroupUnsupported", "InvalidField")


def _resizing(pod: Pod) -> bool:
    return any(c.type in RESIZE_CONDITIONS and c.status == "True" for c in pod.status.conditions) or \
        bool(pod.status.resize)


def match_verdict(pod: Pod, expected: PodCgroups, observed: ObservedPod) -> PodVerdict:
    """A pod's verdict before any difference is found (and after, when none is)."""
    return PodVerdict(namespace=pod.namespace or "", name=pod.name, uid=pod.uid, verdict="Match",
                      cgroup=observed.pod.path, exclusive_cpus=expected.exclusive_cpus)


def compare_pod(pod: Pod, expected: PodCgroups, no_dra: PodCgroups | None, observed: ObservedPod,
                options: NodeOptions, evidence: dict[str, str] | None = None) -> PodVerdict:
    """``no_dra`` (the prediction without DRA) names DRA-related causes; without it they read as
    Unexplained, which lets a caller skip that prediction for pods that match. ``evidence``:
    container -> what shows that something changed it after the kubelet (see :func:`override_evidence`)."""
    no_dra = no_dra or expected
    verdict = match_verdict(pod, expected, observed)
    if expected.unknown:
        verdict.verdict = "Unknown"
        verdict.divergences.append(Divergence(scope="pod", file="-", cause="InvalidField", severity="warning",
                                              message=expected.unknown))
        return verdict
    if observed.pod.error:
        verdict.verdict = "Unknown"
        verdict.divergences.append(Divergence(scope="pod", file="-", cause=observed.pod.error_cause,
                                              severity="warning", message=observed.pod.error))
        return verdict
    diffs: list[Divergence] = []
    pod_ok = _compare(diffs, "pod", None, expected.pod.files, no_dra.pod.files, observed.pod, options)
    no_dra_containers = {c.name: c for c in no_dra.containers}
    for container in expected.containers:
        if container.name in observed.skipped:
            continue
        seen = observed.containers.get(container.name)
        if seen is None or seen.error:
            diffs.append(Divergence(scope="container", container=container.name, file="-",
                                    cause=seen.error_cause if seen else "CgroupMissing",
                                    severity="warning", message=seen.error if seen else "no container ID in the pod "
                                    "status, so its cgroup cannot be found"))
            continue
        _compare(diffs, "container", container.name, container.files, no_dra_containers[container.name].files,
                 seen, options)
        _weight_formula(diffs, container, seen, options)
        _runtime_hugetlb(diffs, container, seen, options)
    _classify(pod, diffs, pod_ok, evidence or {})
    verdict.divergences = diffs
    if any(d.severity in ("error", "warning") and d.cause not in UNKNOWN_CAUSES for d in diffs):
        verdict.verdict = "Diverged"
    elif any(d.cause in UNKNOWN_CAUSES for d in diffs):
        verdict.verdict = "Unknown"
    return verdict


def _compare(diffs: list[Divergence], scope: str, container: str | None, expected: dict[str, str],
             no_dra: dict[str, str], observed: ObservedCgroup, options: NodeOptions) -> bool:
    ok = True
    for file, value in expected.items():
        seen = observed.files.get(file)
        if equivalent(file, value, seen, options):
            continue
        ok = False
        if file in observed.unreadable:
            diffs.append(Divergence(scope=scope, container=container, file=file, expected=value, observed=None,
                                    cause="CgroupUnreadable", severity="warning", message=observed.unreadable[file]))
            continue
        if seen is None:
            diffs.append(Divergence(scope=scope, container=container, file=file, expected=value, observed=None,
                                    cause="CgroupMissing", severity="warning",
                                    message=f"cgroup file {observed.path}/{file} does not exist (controller not enabled?)"))
            continue
        if not readable(file, seen):
            diffs.append(Divergence(scope=scope, container=container, file=file, expected=value, observed=seen[:64],
                                    cause="CgroupUnreadable", severity="warning",
                                    message=f"cgroup file {observed.path}/{file} does not hold a {file} value"))
            continue
        without = no_dra.get(file)
        cause = "DRAAmountMissing" if without is not None and without != value and \
            equivalent(file, without, seen, options) else "Unexplained"
        diffs.append(Divergence(scope=scope, container=container, file=file, expected=value, observed=seen,
                                cause=cause, severity=SEVERITY[cause]))
    return ok


def _weight_formula(diffs: list[Divergence], container, seen: ObservedCgroup, options: NodeOptions) -> None:
    """A container cpu.weight that matches the other runtime formula is a runtime difference."""
    for d in diffs:
        if d.container == container.name and d.file == "cpu.weight" and d.cause == "Unexplained":
            other = "linear" if options.weight_formula == "quadratic" else "quadratic"
            if d.observed == str(f.WEIGHT_FORMULAS[other](container.shares)):
                _assign(d, "WeightFormula", f"shares {container.shares} -> {d.observed} is the {other} formula: this "
                        f"runtime converts differently from --weight-formula {options.weight_formula}")


def _runtime_hugetlb(diffs: list[Divergence], container, seen: ObservedCgroup, options: NodeOptions) -> None:
    """Container hugetlb files and the runtime. When it applies container hugepage limits, a ``max``
    where the kubelet asked for a number is a real difference (said why). When it does not
    (containerd's default), ``max`` is the expected value; where the kubelet asked for pages, that is
    worth knowing (info): only the pod cgroup's limit bounds them."""
    if options.applies_container_hugetlb:
        for d in diffs:
            if d.container == container.name and d.file.startswith("hugetlb.") and d.observed == "max" and \
                    d.cause in ("Unexplained", "DRAAmountMissing"):
                d.message = (f"the kubelet asked for {d.expected} and this runtime applies container hugepage limits "
                             "(a number in another container's hugetlb files shows it, or --runtime-hugetlb on), yet "
                             "the file is max")
        return
    for file, asked in container.cri_hugepages.items():
        if asked != "0" and (asked.isascii() and asked.isdigit()) and seen.files.get(file) == "max":
            diffs.append(Divergence(
                scope="container", container=container.name, file=file, expected=asked, observed="max",
                cause="RuntimeHugetlbDisabled", severity=SEVERITY["RuntimeHugetlbDisabled"],
                message=f"the kubelet asked for {asked}, but the runtime does not apply container hugepage limits "
                        "(containerd's disable_hugetlb_controller, true by default), so the file stays max; the pod "
                        "cgroup's limit still bounds the pod"))


def override_evidence(observed_cpuset: str | None, kubelet_cpuset: frozenset[int] | None,
                      policy_known: bool) -> str | None:
    """What shows that an NRI plugin or a DRA driver changed a container after the kubelet: its
    ``cpuset.cpus`` is not what the kubelet set (nothing under the none policy; its exclusive CPUs
    or the shared pool under static). Only when the policy is known (flag or cpu_manager_state)."""
    if not policy_known or observed_cpuset is None or kubelet_cpuset is None:
        return None
    seen = parse_cpuset(observed_cpuset)
    if seen is None or seen == kubelet_cpuset:
        return None
    set_by_kubelet = ",".join(map(str, sorted(kubelet_cpuset))) or "none"
    return f"cpuset.cpus is {observed_cpuset or 'empty'}, the kubelet set {set_by_kubelet}"


def _assign(d: Divergence, cause: str, message: str) -> None:
    d.cause, d.severity, d.message = cause, SEVERITY[cause], message


def _classify(pod: Pod, diffs: list[Divergence], pod_ok: bool, evidence: dict[str, str]) -> None:
    """Refine causes with what only the whole pod shows."""
    real = [d for d in diffs if d.cause in ("DRAAmountMissing", "Unexplained")]
    if real and all(d.cause == "DRAAmountMissing" for d in real) and \
            (len(real) >= 2 or all(d.scope == "pod" for d in real)):
        for d in real:
            _assign(d, "KubeletDRADisabled", "every value that should include DRA equals the value without it: the "
                    "kubelet does not apply node-allocatable DRA (DRANodeAllocatableResources off, or older than 1.37)")
    for d in real:
        if d.cause == "DRAAmountMissing" and not d.message:
            d.message = "equals the value without the claim's node-allocatable amount"
    if _resizing(pod):
        for d in real:
            _assign(d, "ResizePending", "an in-place resize is pending or in progress; values change once it is "
                                        "actuated")
        return
    plr = pod.spec.resources
    for d in diffs:
        if d.cause != "Unexplained" or d.scope != "container":
            continue
        own_limits = next((c.resources.limits for c in pod.all_containers() if c.name == d.container), {})
        resource = {"cpu.max": "cpu", "memory.max": "memory"}.get(d.file)
        if plr and resource and resource in plr.limits and resource not in own_limits and \
                (d.observed or "").startswith("max"):
            _assign(d, "PodLevelResources", f"the container has no {resource} limit of its own and should inherit "
                    f"the pod-level limit {plr.limits[resource]}; the kubelet or runtime did not apply pod-level "
                    "resources")
        elif pod_ok and d.container in evidence:
            _assign(d, "DriverOverride", f"the container value was changed after the kubelet set it (an NRI plugin "
                    f"or DRA driver: {evidence[d.container]}); the pod-level bound still holds")
    for d in diffs:
        if d.cause == "Unexplained" and not d.message:
            d.message = "no known cause explains this value" + (
                "; the pod-level bound holds, but nothing shows a driver or NRI plugin changed it" if pod_ok and
                d.scope == "container" else "")

