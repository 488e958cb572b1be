"""Predict the cgroup v2 files for a pod and its containers, with the reason for each value.

Pod level is what the kubelet writes itself (ResourceConfigForPod, linear cpu.weight); container
level is what it sends through CRI and the runtime writes (runtime's weight formula). DRA amounts
come only from the recorded 1.37 claim entries, as the kubelet reads nothing else.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from typing import Annotated, Iterable

from pydantic import Field

from kubectl_dra.allocatable.entries import ClaimEntry
from kubectl_dra.allocatable.requests import (container_dra, difference, is_hugepages, pod_limits, pod_requests,
                                              pod_requests_and_limits)
from kubectl_dra.cgroups import formulas as f
from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.cgroups.paths import container_cgroup, pod_cgroup
from kubectl_dra.cgroups.qos import pod_level_resources_set, qos_class
from kubectl_dra.document import part
from kubectl_dra.model.pod import Container, Pod
from kubectl_dra.quantity import Quantity
from kubectl_dra.versions import KUBELET, older

UNLIMITED_POD_PERIOD = f.DEFAULT_PERIOD  # the kubelet writes no period: the kernel default shows


@part
class CgroupFiles:
    path: str
    files: dict[str, str] = dataclasses.field(default_factory=dict)
    because: dict[str, str] = dataclasses.field(default_factory=dict)
    explained: Annotated[bool, Field(exclude=True)] = True  # False: values only (callers skip formatting reasons)

    def set(self, name: str, value: str, reason: str | bool) -> None:
        self.files[name] = value
        if self.explained:
            self.because[name] = reason


@part
class ContainerCgroup(CgroupFiles):
    name: str
    type: str  # container | init | sidecar
    container_id: str | None = None
    shares: int = 2  # the CRI CpuShares the runtime converts to cpu.weight
    cri_hugepages: dict[str, str] = dataclasses.field(default_factory=dict)  # what the kubelet asks for, per file


@part
class PodCgroups:
    qos_class: str
    pod: CgroupFiles
    containers: list[ContainerCgroup] = dataclasses.field(default_factory=list)
    exclusive_cpus: dict[str, str] = dataclasses.field(default_factory=dict)  # container -> cpuset ("" = policy)
    unknown: str | None = None  # why no value can be predicted (an invalid field of the pod)

    def fingerprint(self) -> str:
        """Changes whenever any predicted value or path changes (for stale-report detection)."""
        parts = [(self.pod.path, self.pod.files)] + [(c.name, c.files) for c in self.containers]
        text = "\n".join(f"{where}:{name}={value}" for where, files in parts for name, value in sorted(files.items()))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=64)
def page_size(name: str) -> int | None:
    """Bytes per page of a ``hugepages-<size>`` resource name; None when the size is malformed."""
    try:
        size = Quantity.parse(name[len("hugepages-"):]).value()
    except ValueError:
        return None
    return size if size > 0 else None


@functools.lru_cache(maxsize=16)
def _hugetlb_files(sizes: tuple[int, ...]) -> tuple[tuple[int, str, str, str], ...]:
    """(size, name, its .max file, its .rsvd.max file) per host page size."""
    return tuple((size, name, f"hugetlb.{name}.max", f"hugetlb.{name}.rsvd.max")
                 for size in sizes for name in (f.hugepage_size_name(size),))


@functools.lru_cache(maxsize=16)
def _zero_hugetlb(sizes: tuple[int, ...], rsvd: bool) -> dict[str, str]:
    """Every hugetlb file of the host's page sizes at 0 (.rsvd.max too when written): what a pod or
    container without huge pages gets, the common case, set in one step."""
    return {file: "0" for _, _, max_file, rsvd_file in _hugetlb_files(sizes)
            for file in ((max_file, rsvd_file) if rsvd else (max_file,))}


def hugepage_limits(resources: dict[str, Quantity]) -> dict[int, int]:
    """HugePageLimits: {page size bytes: bytes}, equal sizes summed, malformed names ignored."""
    limits: dict[int, int] = {}
    for name, q in resources.items():
        if not is_hugepages(name):
            continue
        size = page_size(name)
        if size is not None:
            limits[size] = limits.get(size, 0) + q.value()
    return limits


def limits_declared(pod: Pod, kubelet_minor: int = 37) -> tuple[bool, bool]:
    """(cpu, memory): every init and regular container has its own non-zero limit (1.37's plain
    loop in ResourceConfigForPod); a pod-level limit declares it for the whole pod. Kubelets up to
    1.36 ask PodLimits' container callback instead, which hands an init container its limits plus
    those of the sidecars before it (docs/kubernetes/versions.md §5)."""
    cpu = memory = True
    sidecars: dict[str, bool] = {"cpu": False, "memory": False}  # a sidecar so far has a non-zero limit
    inits = len(pod.spec.init_containers)
    for i, container in enumerate(pod.all_containers()):
        limits = container.resources.limits
        has = {r: r in limits and not limits[r].is_zero() for r in ("cpu", "memory")}
        if i < inits and older(KUBELET, "limits declared", kubelet_minor):
            if container.restart_policy == "Always":
                sidecars = {r: sidecars[r] or has[r] for r in has}
                has = dict(sidecars)
            else:
                has = {r: has[r] or sidecars[r] for r in has}
        cpu = cpu and has["cpu"]
        memory = memory and has["memory"]
    if pod_level_resources_set(pod):
        plr = pod.spec.resources.limits
        if "cpu" in plr and not plr["cpu"].is_zero():
            cpu = True
        if "memory" in plr and not plr["memory"].is_zero():
            memory = True
    return cpu, memory


def static_exclusive(pod: Pod) -> list[str]:
    """Containers the static CPU manager gives exclusive CPUs (``guaranteedCPUs``): a Guaranteed
    pod without pod-level resources (PodLevelResourceManagers is off by default in 1.37), a whole
    positive number of CPUs requested. Init containers and sidecars count too."""
    if qos_class(pod) != "Guaranteed" or pod_level_resources_set(pod):
        return []
    names = []
    for container in pod.all_containers():
        cpu = container.resources.requests.get("cpu", container.resources.limits.get("cpu"))
        if cpu is not None and cpu.sign() > 0 and cpu.milli_value() % 1000 == 0:
            names.append(container.name)
    return names


def exclusive_cpus(pod: Pod, options: NodeOptions, assignments: dict[str, str] | None = None) -> dict[str, str]:
    """Container -> exclusive cpuset ("" when only the policy says so): the kubelet's state when
    it was read (``assignments``, from cpu_manager_state), else the static policy's rule."""
    if assignments is not None:
        return {name: cpus for name, cpus in assignments.items() if cpus}
    if options.cpu_manager_policy != "static":
        return {}
    return {name: "" for name in static_exclusive(pod)}


def _q(amounts: dict[str, Quantity], name: str) -> Quantity | None:
    return amounts.get(name)


def _dra_note(dra: dict[str, Quantity], name: str) -> str:
    return f" + DRA {dra[name]}" if name in dra and not dra[name].is_zero() else ""


def _total(amounts: dict[str, Quantity], dra: dict[str, Quantity], name: str) -> str:
    """``spec + DRA = total`` when DRA contributes, else just the total."""
    total = amounts.get(name)
    if total is None:
        return "0"
    if name in dra and not dra[name].is_zero():
        return f"{total - dra[name]} + DRA {dra[name]} = {total}"
    return str(total)


def predict_pod(pod: Pod, entries: Iterable[ClaimEntry], options: NodeOptions,
                exclusive: dict[str, str] | None = None, explain: bool = False) -> PodCgroups:
    """``exclusive``: the kubelet's exclusive cpusets of this pod's containers (cpu_manager_state),
    when known; otherwise the static policy's rule decides (``--cpu-manager-policy``). ``explain``
    also gives the reason for each value (``because``); the agent, checking every pod of a node
    against its files, needs only the values."""
    kubelet_entries = [e for e in entries if e.generation == "v1.37"] if options.kubelet_dra else []
    qos = qos_class(pod)
    path = pod_cgroup(qos, pod.uid, options.cgroup_driver, options.kubelet_cgroup_root)
    invalid = pod.invalid_resource_fields()
    if invalid:
        if pod.status.qos_class != qos:  # computed from what is left of the resources: not known either
            qos, path = "unknown", ""
        return PodCgroups(qos_class=qos, pod=CgroupFiles(path=path),
                          unknown=f"the pod has invalid fields ({', '.join(invalid)}): its cgroup values cannot be "
                                  "computed")
    pinned = exclusive_cpus(pod, options, exclusive)
    result = PodCgroups(qos_class=qos, pod=_pod_files(pod, qos, path, kubelet_entries, options, pinned, explain),
                        exclusive_cpus=pinned)
    plr_limits = pod.spec.resources.limits if pod_level_resources_set(pod) else None
    for container, kind in _containers(pod):
        result.containers.append(_container_files(pod, container, kind, path, kubelet_entries, options, pinned,
                                                  explain, plr_limits))
    return result


def _container_hugepages(pod: Pod, limits, plr_limits, dra, explain: bool) -> tuple[dict[int, int], dict[int, str]]:
    """GetHugepageLimitsFromResources (1.37): the pod-level limit a container inherits, its own limit
    over it, then DRA: added to an own limit, the whole value where neither limit exists, nothing
    where only the pod-level limit exists."""
    pages: dict[int, int] = {}
    why: dict[int, str] = {}
    # a name that starts with "hugepages-" contains it: a cheap test of every name at once that
    # can only send an odd name (e.g. example.com/hugepages-x) to the exact path below
    if "hugepages-" not in "".join(limits) and not (plr_limits and "hugepages-" in "".join(plr_limits)) \
            and "hugepages-" not in "".join(dra):
        return pages, why  # the common case: no huge pages anywhere
    own = hugepage_limits(limits)
    for size, value in hugepage_limits(plr_limits or {}).items():
        if size not in own:
            pages[size], why[size] = value, explain and f"no own limit: pod-level limit {value}"
    for size, value in own.items():
        pages[size], why[size] = value, explain and f"limit {value}"
    plr_sizes = set(hugepage_limits(plr_limits or {}))
    for size, amount in hugepage_limits({k: v for k, v in dra.items() if is_hugepages(k)}).items():
        if size in own:
            pages[size] += amount
            why[size] = explain and why[size] + f" + DRA {amount}"
        elif size not in plr_sizes:
            pages[size], why[size] = amount, explain and f"no limit: the DRA amount {amount}"
        else:
            why[size] = explain and why[size] + f" (DRA {amount} not added)"
    return pages, why


def _containers(pod: Pod):
    for c in pod.spec.init_containers:
        yield c, "sidecar" if c.restart_policy == "Always" else "init"
    for c in pod.spec.containers:
        yield c, "container"


def _pod_files(pod: Pod, qos: str, path: str, entries: list[ClaimEntry], options: NodeOptions,
               pinned: dict[str, str], explain: bool) -> CgroupFiles:
    files = CgroupFiles(path=path, explained=explain)
    req, lim = pod_requests_and_limits(pod, entries)
    if explain or not entries:  # what DRA adds appears in reasons only
        spec_req, spec_lim = (pod_requests(pod), pod_limits(pod)) if entries else (req, lim)
        dra_req, dra_lim = difference(req, spec_req), difference(lim, spec_lim)
    else:
        spec_req = spec_lim = dra_req = dra_lim = {}
    plr = pod.spec.resources
    plr_note = lambda name, kind: " (pod-level resources: DRA not added)" if plr and name in getattr(plr, kind) else ""  # noqa: E731
    cpu_declared, memory_declared = limits_declared(pod, options.kubelet_minor)
    period = options.cpu_cfs_period

    if qos == "BestEffort":
        files.set("cpu.weight", str(f.weight_linear(f.MIN_SHARES)),
                  "BestEffort pod: minimum shares 2 -> linear weight 1" + (" (DRA never changes QoS)" if entries else ""))
    else:
        milli = req["cpu"].milli_value() if "cpu" in req else 0
        shares = f.milli_cpu_to_shares(milli)
        files.set("cpu.weight", str(f.weight_linear(shares)),
                  explain and f"requests {_total(req, dra_req, 'cpu')}{plr_note('cpu', 'requests')} -> shares "
                  f"{shares} -> kubelet's linear weight")

    if (qos == "Guaranteed" or (qos == "Burstable" and cpu_declared)) and not options.cpu_cfs_quota:
        files.set("cpu.max", f.cpu_max(-1, period), "cpuCFSQuota is false: the kubelet enforces no pod quota")
    elif (qos == "Guaranteed" or (qos == "Burstable" and cpu_declared)) and pinned:
        files.set("cpu.max", f.cpu_max(-1, period),
                  explain and f"exclusive CPUs ({', '.join(sorted(pinned))}): DisableCPUQuotaWithExclusiveCPUs leaves "
                  "the pod without quota (set when the pod cgroup is created)")
    elif qos == "Guaranteed" or (qos == "Burstable" and cpu_declared):
        milli = lim["cpu"].milli_value() if "cpu" in lim else 0
        quota = f.milli_cpu_to_quota(milli, period)
        files.set("cpu.max", f.cpu_max(quota, period),
                  explain and f"limits {_total(lim, dra_lim, 'cpu')}{plr_note('cpu', 'limits')} x period {period}us")
    else:
        files.set("cpu.max", f.cpu_max(-1, UNLIMITED_POD_PERIOD),
                  explain and "not every container has a cpu limit: the kubelet sets no pod quota"
                  + (f" (DRA cpu {dra_req['cpu']} not enforced)" if "cpu" in dra_req else ""))

    if qos == "Guaranteed" or (qos == "Burstable" and memory_declared):
        value = lim["memory"].value() if "memory" in lim else 0
        files.set("memory.max", str(value) if value > 0 else "max",
                  explain and f"limits {_total(lim, dra_lim, 'memory')}{plr_note('memory', 'limits')}")
    else:
        files.set("memory.max", "max", explain and "not every container has a memory limit: no pod memory limit"
                  + (f" (DRA memory {dra_req['memory']} not enforced)" if "memory" in dra_req else ""))

    pages = hugepage_limits(req)
    if not pages and not explain:  # the kubelet writes .max and .rsvd.max of every size on the pod
        files.files.update(_zero_hugetlb(tuple(options.hugepage_sizes), True))
    else:
        spec_pages = hugepage_limits(spec_req)
        for size, name, max_file, rsvd_file in _hugetlb_files(tuple(options.hugepage_sizes)):
            value = pages.get(size, 0)
            reason = explain and (f"requests {value} bytes of {name} pages" + (
                f" (DRA {value - spec_pages.get(size, 0)})" if value != spec_pages.get(size, 0) else "")
                if value else f"no {name} pages requested")
            files.set(max_file, str(value), reason)
            files.set(rsvd_file, str(value), "same value as .max (opencontainers/cgroups)")

    if options.memory_qos != "off":
        _pod_memory_qos(files, pod, qos, req, options, explain)
    return files


def _pod_memory_qos(files: CgroupFiles, pod: Pod, qos: str, req, options: NodeOptions, explain: bool) -> None:
    """ResourceConfigForPod (memory.min/low, TieredReservation; before 1.36 memory.min) and
    ApplyPodLevelMemoryHigh (memory.high, only for pods with pod-level resources)."""
    request = req["memory"].value() if "memory" in req else 0
    if request and options.memory_qos == "tiered" and qos in ("Guaranteed", "Burstable"):
        name = "memory.min" if qos == "Guaranteed" else "memory.low"
        files.set(name, str(request), explain and f"Memory QoS (TieredReservation): {qos} pod -> {name} = memory "
                                                  "requests incl. DRA")
    elif request and options.memory_qos == "legacy":
        files.set("memory.min", str(request), "Memory QoS (kubelets before 1.36): memory requests incl. DRA")
    if not pod_level_resources_set(pod):
        return
    declared = all("memory" in c.resources.limits and not c.resources.limits["memory"].is_zero()
                   for c in pod.all_containers())
    plr_limit = pod.spec.resources.limits.get("memory")
    if not declared and (plr_limit is None or plr_limit.is_zero()):
        return
    without_dra_req, without_dra_lim = pod_requests(pod), pod_limits(pod)  # ApplyPodLevelMemoryHigh adds no DRA
    request = without_dra_req["memory"].value() if "memory" in without_dra_req else 0
    limit = without_dra_lim["memory"].value() if "memory" in without_dra_lim else 0
    if (request == limit and request) or not limit or options.throttling_factor is None:
        return
    high = _memory_high(request, limit, options)
    if high > request:
        files.set("memory.high", str(high), explain and f"Memory QoS, pod-level resources: request + "
                                            f"{options.throttling_factor} x (limit - request), whole pages")


def _memory_high(request: int, limit: int, options: NodeOptions) -> int:
    """The kubelet's formula in float64, as Go computes it: floor(req + (limit - req) x factor), in
    whole pages."""
    value = math.floor(float(request) + (float(limit) - float(request)) * float(options.throttling_factor))
    return int(value / f.PAGE_SIZE) * f.PAGE_SIZE


def _container_memory_qos(out: ContainerCgroup, pod: Pod, container: Container, dra, plr_limits,
                          options: NodeOptions, explain: bool) -> None:
    """generateLinuxContainerResources with enforceMemoryQoS (1.37)."""
    request = container.resources.requests.get("memory")
    request = request.value() if request is not None else 0
    spec_limit = container.resources.limits.get("memory")
    spec_limit = spec_limit.value() if spec_limit is not None else 0
    if options.memory_qos == "legacy":
        if request:
            out.set("memory.min", str(request), "Memory QoS (kubelets before 1.36): memory request (DRA not added)")
    elif request and options.memory_qos == "tiered":
        guaranteed = qos_class(pod) == "Guaranteed"
        name = "memory.min" if guaranteed else "memory.low"
        kind = "Guaranteed" if guaranteed else "not Guaranteed"
        out.set(name, str(request), explain and f"Memory QoS (TieredReservation): {kind} pod -> {name} = memory "
                                                "request (DRA not added)")
    else:
        reason = "Memory QoS (reservation policy None): no memory protection"
        out.set("memory.min", "0", reason)
        out.set("memory.low", "0", reason)
    if options.throttling_factor is None:
        return  # memoryThrottlingFactor unset (the 1.37 default): the kubelet sets no memory.high
    inherited = plr_limits is not None and "memory" in plr_limits and not plr_limits["memory"].is_zero()
    if spec_limit == 0 and inherited:
        return  # the pod cgroup's memory.high throttles it (skipContainerMemoryHigh)
    if request == spec_limit and request != 0:
        return  # request == limit: nothing to throttle before the limit
    limit, source = spec_limit, "limit"
    if "memory" in dra and spec_limit and out.files.get("memory.max", "max") != "max":
        limit, source = int(out.files["memory.max"]), "limit incl. DRA"
    if not limit:
        if not options.node_allocatable_memory:
            return
        limit, source = options.node_allocatable_memory, "node memory capacity minus reserved (no limit)"
    high = _memory_high(request, limit, options)
    if high and high > request:
        out.set("memory.high", str(high), explain and f"Memory QoS: request + {options.throttling_factor} x "
                                                      f"({source} - request), whole pages")


def _container_files(pod: Pod, container: Container, kind: str, pod_path: str, entries: list[ClaimEntry],
                     options: NodeOptions, pinned: dict[str, str], explain: bool,
                     plr_limits: dict[str, Quantity] | None) -> ContainerCgroup:
    status = pod.container_status(container.name)
    runtime_id = status.runtime_and_id if status else None
    cid = runtime_id[1] if runtime_id else None
    path = container_cgroup(pod_path, cid, options.cgroup_driver, options.runtime) if cid else \
        container_cgroup(pod_path, "<container-id>", options.cgroup_driver, options.runtime)
    out = ContainerCgroup(name=container.name, type=kind, container_id=cid, path=path, explained=explain)
    requests, limits = container.resources.requests, container.resources.limits
    dra = container_dra(entries, container.name) if entries else {}
    period = options.cpu_cfs_period
    formula = f.WEIGHT_FORMULAS[options.weight_formula]

    # generateLinuxContainerResources: no cpu request -> the cpu limit without DRA (its own, else the
    # pod-level one it inherits), so a container under pod-level resources is weighted by the pod limit
    if "cpu" in requests:
        shares, source = f.milli_cpu_to_shares(requests["cpu"].milli_value()), explain and f"request {requests['cpu']}"
    elif "cpu" in limits and not limits["cpu"].is_zero():
        shares = f.milli_cpu_to_shares(limits["cpu"].milli_value())
        source = explain and f"no request: limit {limits['cpu']}"
    elif plr_limits is not None and "cpu" in plr_limits:
        shares = f.milli_cpu_to_shares(plr_limits["cpu"].milli_value())
        source = explain and f"no request or limit: the pod-level limit {plr_limits['cpu']} it inherits"
    else:
        shares, source = f.MIN_SHARES, "no request or limit"
    out.shares = shares
    out.set("cpu.weight", str(formula(shares)), explain and
            f"{source} -> shares {shares} -> {options.weight_formula} weight (runtime); DRA never adds cpu shares")

    for resource, file in (("cpu", "cpu.max"), ("memory", "memory.max")):
        own = limits.get(resource)
        fallback = plr_limits.get(resource) if plr_limits is not None else None
        if own is not None and not own.is_zero():
            total = own + dra[resource] if resource in dra else own
            reason = explain and f"limit {own}{_dra_note(dra, resource)}"
        elif fallback is not None:
            total, reason = fallback, explain and f"no own limit: pod-level limit {fallback} (DRA not added)"
        else:
            total = None
            reason = explain and (f"no {resource} limit: unlimited"
                                  + (f" (DRA {dra[resource]} ignored)" if resource in dra else ""))
        if resource == "cpu":
            if not options.cpu_cfs_quota:
                out.set(file, f.cpu_max(-1, f.DEFAULT_PERIOD),
                        "cpuCFSQuota is false: the kubelet sends no quota and the kernel default stays")
            elif container.name in pinned:
                cpus = f" {pinned[container.name]}" if pinned[container.name] else ""
                out.set(file, f.cpu_max(-1, period), explain and
                        f"exclusive CPUs{cpus} (static CPU manager): DisableCPUQuotaWithExclusiveCPUs sends quota -1")
            else:
                quota = f.milli_cpu_to_quota(total.milli_value(), period) if total is not None else 0
                out.set(file, f.cpu_max(quota, period), explain and reason + (f" x period {period}us" if quota else ""))
        else:
            value = total.value() if total is not None else 0
            out.set(file, str(value) if value > 0 else "max", reason)

    # the kubelet always sends every host page size (0 when not requested); a runtime that does not apply
    # container hugepage limits (containerd's default) writes nothing, so the files keep the kernel's "max"
    # (seen on a real containerd 2.4.2 node: every container hugetlb file read max)
    pages, why = _container_hugepages(pod, limits, plr_limits, dra, explain)
    rsvd = options.writes_rsvd
    applied = options.applies_container_hugetlb
    if not pages and not explain:
        zeros = _zero_hugetlb(tuple(options.hugepage_sizes), rsvd)
        out.files.update(zeros if applied else dict.fromkeys(zeros, "max"))
        out.cri_hugepages.update(zeros)
    else:
        for size, name, max_file, rsvd_file in _hugetlb_files(tuple(options.hugepage_sizes)):
            value = str(pages.get(size, 0))
            reason = explain and why.get(size, f"no {name} pages: 0")
            written = value if applied else "max"
            if explain and not applied:
                reason = (f"the kubelet sends {value} ({reason}), but the runtime does not apply container hugepage "
                          "limits (containerd's disable_hugetlb_controller, true by default): the file stays max")
            out.set(max_file, written, reason)
            out.cri_hugepages[max_file] = value
            if rsvd:
                out.set(rsvd_file, written, "runc writes .rsvd.max with the same value" if applied else reason)
                out.cri_hugepages[rsvd_file] = value

    if options.memory_qos != "off":
        _container_memory_qos(out, pod, container, dra, plr_limits, options, explain)
    return out

