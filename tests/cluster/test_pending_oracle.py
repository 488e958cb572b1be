"""Why is it Pending, checked against the real kube-scheduler (v1.37.2) on generated scenarios.

Every scenario comes from ``random.Random(seed)`` (the seeds are listed below; set
``PENDING_ORACLE_SEEDS=3,17`` to run only those). It starts from a clean slate: the previous
scenario's pods, claims, slices, class and nodes are deleted and gone, so "0/N nodes" counts this
scenario's nodes only. Then:
- 2-5 nodes without kubelets (Ready, as the loader makes them), with random allocatable cpu,
  memory, pods and ephemeral-storage, sometimes hugepages-2Mi or an extended resource; zone, disk
  and generation labels; NoSchedule, NoExecute or PreferNoSchedule taints;
- pods bound with spec.nodeName that use cpu, memory and host ports, carry labels, some with
  required anti-affinity, some finished (a terminal pod counts for nothing);
- a DeviceClass and a ResourceSlice per node, whose devices sometimes map memory or cpu to node
  allocatable (KEP-5517), so a claim alone can make a node say "Insufficient memory";
- one or two pending pods, one at a time, with random requests (init containers, sidecars),
  nodeSelector, required node affinity (every operator, matchFields), tolerations, host ports,
  DoNotSchedule spread constraints, required pod (anti-)affinity and a claim from a template.
The seed also picks a theme: "mixed" throws all of it at every node (taints and selectors, the
early filters, then decide most nodes); the others quiet the early filters and give each node a
role (open, refused early, or refused by the theme's late filter: DynamicResources and its
mappings, PodTopologySpread, InterPodAffinity, NodePorts), so most pods end Unschedulable with
mixed reasons, some fit, and every filter gets the last word somewhere (checked at the end).

For each pending pod the explainer reads the live cluster and explains the pod as it will be
created (the server's dry run of it); then the pod is created and the scheduler decides:
- Unschedulable: the explainer's message equals the scheduler's up to " preemption:" (the
  DefaultPreemption PostFilter's part; every pod has priority 0, so nothing is ever evicted), no
  node fits, and `kubectl dra explain pod` on the live pending pod says the same message;
- bound: the explainer has no message and calls the chosen node fitting.
A node the explainer cannot decide must carry a notEvaluated entry; such nodes are counted.

The node lifecycle controller does not run in ``full_cluster`` (controlplane.py leaves it out
where no kubelet reports), so nothing taints a node between the scheduler's attempt and the
explainer's read; bound pods tolerate every taint, so the taint eviction controller leaves them.
"""

from __future__ import annotations

import os
import random
import time
import urllib.error
from collections import Counter
from dataclasses import dataclass

import pytest
from clusterobjects import ready_node, scheduled_false, settle, wait_for
from loader import load

from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.sources import open_source
from kubectl_dra.model.registry import parse_object

SEEDS = list(range(1, 37))  # 36 scenarios; a failure names its seed
PREFIX = "pend"  # every node, namespace and driver of this file starts with it
IMAGE = "registry.example/app:1"
ZONES = ("zone-a", "zone-b", "zone-c")
TAINT_KEYS = ("dedicated", "gpu", "maintenance")
PORTS = (8080, 9090)
APPS = ("web", "db", "cache")
FINALIZER = "example.com/hold"


def _seeds() -> list[int]:
    chosen = os.environ.get("PENDING_ORACLE_SEEDS")
    return [int(s) for s in chosen.split(",")] if chosen else SEEDS


# -- the generator ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Knobs:
    """How likely each feature is in a scenario. ``MIXED`` throws everything at every node (the
    early filters, taints and selectors, decide most nodes); the themed scenarios start from
    ``_QUIET`` (nothing early refuses) and give each node a role (see ``_theme``), so that the late
    filters (ports, spread, inter-pod affinity, DynamicResources and its node-allocatable
    mappings) have the last word on some nodes."""

    taint: float = 0.18
    effects: tuple = ("NoSchedule", "NoExecute", "PreferNoSchedule")
    tolerate: float = 0.4
    selector: float = 0.25
    node_affinity: float = 0.35
    node_cpu: tuple = ("2", "4", "4", "8", "3500m")
    node_memory: tuple = ("4Gi", "8Gi", "8Gi", "16Gi", "12Gi")
    node_pods: tuple = (2, 3, 5, 110, 110)
    node_scalar: float = 0.3
    bound: tuple = (0, 1, 1, 2, 3)
    bound_share: tuple = (0.1, 0.25, 0.4, 0.5)
    bound_port: float = 0.35
    bound_anti: float = 0.2
    bound_apps: tuple = APPS
    cpu: tuple = ("500m", "1", "1500m", "2", "3", "6")
    memory: tuple = ("512Mi", "1Gi", "2Gi", "4Gi", "6Gi", "10Gi")
    scalar: float = 0.2
    init: float = 0.3
    sidecar: float = 0.25
    port: float = 0.3
    spread: float = 0.3
    affinity: float = 0.15
    anti: float = 0.2
    apps: tuple = ("web", "web", "db", "batch")
    claim: float = 0.45
    pin: float = 0.2
    cordon: float = 0.1
    pod_level: float = 0.5  # pod-level resources (PodLevelResources, beta and on at v1.37.2)
    overhead: float = 0.5  # a RuntimeClass with a fixed pod overhead
    devices: tuple = (0, 1, 1, 2, 2, 3)
    device_kinds: tuple = ("plain", "memory", "memory", "cpu", "overhead", "mixed")


MIXED = Knobs()
_QUIET = dict(taint=0.2, effects=("PreferNoSchedule",), tolerate=0.1, selector=0.0, node_affinity=0.05,
              node_cpu=("4", "8"), node_memory=("8Gi", "16Gi"), node_pods=(110,), node_scalar=0.0, bound=(0, 1),
              bound_share=(0.05, 0.1), bound_port=0.0, bound_anti=0.0, bound_apps=("batch",),
              cpu=("250m", "500m", "1"), memory=("256Mi", "512Mi", "1Gi"), scalar=0.0, init=0.0, sidecar=0.2,
              port=0.0, spread=0.0, affinity=0.0, anti=0.0, apps=("web",), claim=0.0, devices=(0,), pod_level=0.0,
              pin=0.0, overhead=0.0, cordon=0.0)
# seed -> theme, round the cycle; every theme but "mixed" quiets the early filters and gives each node a role
THEMES = ("mixed", "dra", "interpod", "spread", "mixed", "dra", "interpod", "ports", "mixed", "dra", "interpod",
          "spread")
ROLES = {"open": 0.12, "early": 0.3, "late": 0.58}  # nothing refuses / an early filter does / the theme's does


def scenario(seed: int) -> dict:
    """Everything one scenario creates: namespace, nodes, class, slices, bound pods, templates and
    the pending pods in the order they come."""
    rng = random.Random(seed)
    theme = THEMES[seed % len(THEMES)]
    knobs = MIXED if theme == "mixed" else Knobs(**_QUIET)
    ns = f"{PREFIX}-s{seed}"
    driver = f"{PREFIX}{seed}.example.com"
    names = [f"{PREFIX}-s{seed}-n{i}" for i in range(rng.randint(2, 5))]
    nodes, bound, slices = [], [], []
    for name in names:
        nodes.append(_node(rng, knobs, name))
        slices.append(_slice(rng, knobs, name, driver))
    for node in nodes:
        for j in range(rng.choice(knobs.bound)):
            bound.append(_bound_pod(rng, knobs, ns, node, j))
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
                    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}
    templates, pending = [], []
    runtime_class = None
    if rng.random() < knobs.overhead:  # admission copies its overhead into the pod
        runtime_class = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                         "metadata": {"name": f"{PREFIX}-s{seed}-rc"}, "handler": "runc",
                         "overhead": {"podFixed": {"cpu": rng.choice(["250m", "1"]),
                                                   "memory": rng.choice(["256Mi", "2Gi"])}}}
    for k in range(1 if rng.random() < 0.75 else 2):
        pod, template = _pending_pod(rng, knobs, ns, f"pending-{k}", names, driver)
        if runtime_class:
            pod["spec"]["runtimeClassName"] = runtime_class["metadata"]["name"]
        pending.append(pod)
        if template:
            templates.append(template)
    if theme != "mixed":
        variant = _theme(rng, theme, ns, driver, nodes, slices, bound, pending, templates)
        theme = f"{theme}/{variant}"
    return {"theme": theme, "namespace": ns, "driver": driver, "nodes": nodes, "class": device_class,
            "runtime": [runtime_class] if runtime_class else [],
            "slices": [s for s in slices if s], "bound": bound, "templates": templates, "pending": pending}


def _small(ns: str, node: dict, name: str, app: str, _container: dict | None = None, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
            "spec": {"nodeName": node["metadata"]["name"], "terminationGracePeriodSeconds": 0,
                     "tolerations": [{"operator": "Exists"}], **spec,
                     "containers": [{"name": "c", "image": IMAGE,
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                                     **(_container or {})}]}}


def _theme(rng, theme: str, ns: str, driver: str, nodes: list, slices: list, bound: list, pending: list,
           templates: list) -> str:
    """Each node gets a role: open (the pod fits), early (an untolerated NoSchedule taint, or a pod
    that holds all its cpu) or late (the theme's filter refuses it); the pending pods get the
    theme's feature. What the scheduler makes of it is the scheduler's business: nothing here
    predicts the message."""
    variant = {"dra": "claims", "spread": rng.choice(["hostname", "hostname", "zone"]), "ports": "hostPort",
               "interpod": rng.choice(["anti", "existing-anti", "affinity"])}[theme]
    for i, node in enumerate(nodes):
        name = node["metadata"]["name"]
        short = name.rsplit("-", 1)[1]
        role = rng.choices(list(ROLES), weights=list(ROLES.values()))[0]
        if role == "early":
            if rng.random() < 0.5:
                node.setdefault("spec", {}).setdefault("taints", []).append(
                    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
            else:
                hog = _small(ns, node, f"{short}-hog", "batch")
                hog["spec"]["containers"][0]["resources"]["requests"]["cpu"] = node["status"]["allocatable"]["cpu"]
                bound.append(hog)
        if theme == "dra":
            slices[i] = _themed_slice(rng, node, driver, role)
        elif theme == "spread" and role == "late":
            bound += [_small(ns, node, f"{short}-web{j}", "web") for j in range(2)]
            if rng.random() < 0.25:  # being deleted (a finalizer holds it): spread does not count it
                _terminating(bound[-1])
        elif theme == "ports" and role == "late":
            bound.append(_small(ns, node, f"{short}-port", "batch",
                                _container={"ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]}))
        elif theme == "interpod":
            if variant == "anti" and role == "late":
                bound.append(_small(ns, node, f"{short}-db", "db"))
            elif variant == "existing-anti" and role == "late":
                bound.append(_small(ns, node, f"{short}-lonely", "db", affinity={"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{
                        "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}))
            elif variant == "affinity" and role != "late":
                bound.append(_small(ns, node, f"{short}-cache", "cache"))
    for pod in pending:
        spec = pod["spec"]
        pod["metadata"]["labels"] = {"app": "web"}
        if theme == "spread":
            key = "kubernetes.io/hostname" if variant == "hostname" else "topology.kubernetes.io/zone"
            constraint = {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                          "labelSelector": {"matchLabels": {"app": "web"}}}
            if rng.random() < 0.3:  # tainted nodes leave the domains
                constraint["nodeTaintsPolicy"] = "Honor"
            if rng.random() < 0.25:  # fewer domains than that: the global minimum counts as 0
                constraint["minDomains"] = rng.choice([2, 4, 6])
            if rng.random() < 0.25:  # merged into the selector from the pod's own labels
                constraint["labelSelector"] = {}
                constraint["matchLabelKeys"] = ["app"]
            spec["topologySpreadConstraints"] = [constraint]
        elif theme == "ports":
            spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]
        elif theme == "interpod" and variant != "existing-anti":
            kind, app = ("podAntiAffinity", "db") if variant == "anti" else ("podAffinity", "cache")
            term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
            if rng.random() < 0.3:  # every namespace's pods (the scheduler reads the namespaces' labels)
                term["namespaceSelector"] = {}
            spec.setdefault("affinity", {})[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        elif theme == "dra" and not spec.get("resourceClaims"):
            name = pod["metadata"]["name"]
            templates.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                              "metadata": {"name": f"{name}-dev", "namespace": ns},
                              "spec": {"spec": {"devices": {"requests": [{"name": "req", "exactly": {
                                  "deviceClassName": driver}}]}}}})
            spec["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": f"{name}-dev"}]
            spec["containers"][0]["resources"]["claims"] = [{"name": "dev"}]
    return variant


def _themed_slice(rng, node: dict, driver: str, role: str) -> dict | None:
    """Open and early nodes: plain devices, or ones with a small per-pod memory overhead. Late
    nodes: no device, or one that maps the node's whole memory (or cpu) to the claim (KEP-5517), so
    that only the claim makes the pod not fit; sometimes such a device comes first and a plain one
    after it."""
    name = node["metadata"]["name"]
    alloc = node["status"]["allocatable"]
    if role != "late":
        plain = [{"name": f"dev-{i}"} for i in range(rng.randint(1, 2))]
        if rng.random() < 0.3:
            plain[0]["nodeAllocatableResources"] = {"memory": {"overhead": {"perPod": "512Mi"}}}
        devices = plain
    else:
        kind = rng.choice(["none", "memory", "memory", "memory", "cpu", "memory-then-plain"])
        if kind == "none":
            return None
        resource = "cpu" if kind == "cpu" else "memory"
        devices = [{"name": "dev-0", "nodeAllocatableResources": {resource: {"mapping": {
            "deviceMultiplier": alloc[resource]}}}}]
        if kind == "memory-then-plain":
            devices.append({"name": "dev-1"})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{driver.split('.')[0]}"},
            "spec": {"driver": driver, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def _node(rng, knobs: Knobs, name: str) -> dict:
    allocatable = {"cpu": rng.choice(knobs.node_cpu), "memory": rng.choice(knobs.node_memory),
                   "pods": str(rng.choice(knobs.node_pods)),
                   "ephemeral-storage": rng.choice(["10Gi", "20Gi", "100Gi"])}
    if rng.random() < knobs.node_scalar:
        allocatable["hugepages-2Mi"] = rng.choice(["0", "128Mi", "1Gi"])
    if rng.random() < knobs.node_scalar:
        allocatable["example.com/widget"] = str(rng.randint(0, 2))
    node = ready_node(name, allocatable, declaredFeatures=["DRANodeAllocatableResources"])
    labels = node["metadata"]["labels"]
    if rng.random() < 0.85:
        labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
    if rng.random() < 0.7:
        labels["disk"] = rng.choice(["ssd", "hdd"])
    if rng.random() < 0.7:
        labels["gen"] = str(rng.randint(1, 5))
    if rng.random() < 0.2:
        labels["gpu"] = "true"
    taints = []
    for key in TAINT_KEYS:
        if rng.random() < knobs.taint:
            taints.append({"key": key, "value": rng.choice(["a", "b"]), "effect": rng.choice(knobs.effects)})
    if taints:
        node["spec"] = {"taints": taints}
    if rng.random() < knobs.cordon:  # spec.unschedulable (no node lifecycle controller adds its taint)
        node.setdefault("spec", {})["unschedulable"] = True
    return node


def _slice(rng, knobs: Knobs, node: str, driver: str) -> dict | None:
    """Devices of the scenario's driver on a node: none, plain ones, ones that map memory or cpu to
    node allocatable (KEP-5517), ones with a per-pod memory overhead, or a mix in slice order."""
    count = rng.choice(knobs.devices)
    if not count:
        return None
    kind = rng.choice(knobs.device_kinds)
    devices = []
    for i in range(count):
        device: dict = {"name": f"dev-{i}", "attributes": {"index": {"int": i}}}
        this = kind if kind != "mixed" else rng.choice(["plain", "memory"])
        if this == "memory":
            device["nodeAllocatableResources"] = {"memory": {"mapping": {
                "deviceMultiplier": rng.choice(["2Gi", "6Gi", "10Gi"])}}}
        elif this == "cpu":
            device["nodeAllocatableResources"] = {"cpu": {"mapping": {"deviceMultiplier": rng.choice(["1", "2"])}}}
        elif this == "overhead":
            device["nodeAllocatableResources"] = {"memory": {"overhead": {"perPod": rng.choice(["1Gi", "4Gi"]),
                                                                          "perContainer": "256Mi"}}}
        devices.append(device)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver.split('.')[0]}"},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def _milli(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(text) * 1000


def _gi(text: str) -> float:
    return float(text[:-2]) if text.endswith("Gi") else float(text[:-2]) / 1024


def _bound_pod(rng, knobs: Knobs, ns: str, node: dict, j: int) -> dict:
    name = node["metadata"]["name"]
    alloc = node["status"]["allocatable"]
    cpu = f"{int(_milli(alloc['cpu']) * rng.choice(knobs.bound_share))}m"
    memory = f"{int(_gi(alloc['memory']) * 1024 * rng.choice(knobs.bound_share))}Mi"
    container: dict = {"name": "c", "image": IMAGE, "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    if rng.random() < knobs.bound_port:
        container["ports"] = [{"containerPort": 80, "hostPort": rng.choice(PORTS), "protocol": "TCP"}]
    spec: dict = {"nodeName": name, "containers": [container], "terminationGracePeriodSeconds": 0,
                  "tolerations": [{"operator": "Exists"}]}  # the taint eviction controller leaves them be
    app = rng.choice(knobs.bound_apps)
    if rng.random() < knobs.bound_anti:  # refuses pods of an app next to it (existing pods' anti-affinity)
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": rng.choice(("web", "db"))}},
            "topologyKey": rng.choice(["kubernetes.io/hostname", "topology.kubernetes.io/zone"])}]}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{name.rsplit('-', 1)[1]}-b{j}", "namespace": ns, "labels": {"app": app}},
           "spec": spec}
    if rng.random() < 0.1:  # finished: the scheduler's cache leaves it out
        pod["status"] = {"phase": "Succeeded"}
    elif rng.random() < 0.08:  # being deleted: still counted where the cache counts it
        _terminating(pod)
    return pod


def _terminating(pod: dict) -> None:
    """The loader creates the pod, then deletes it; the finalizer keeps it (clean_slate lifts it)."""
    pod["metadata"]["finalizers"] = [FINALIZER]
    pod["metadata"]["deletionTimestamp"] = "2026-11-20T08:00:00Z"


def _pending_pod(rng, knobs: Knobs, ns: str, name: str, nodes: list[str], driver: str) -> tuple[dict, dict | None]:
    requests = {"cpu": rng.choice(knobs.cpu), "memory": rng.choice(knobs.memory)}
    limits = {}
    if rng.random() < knobs.scalar:
        requests["ephemeral-storage"] = rng.choice(["5Gi", "15Gi", "50Gi"])
    if rng.random() < knobs.scalar * 0.75:
        requests["hugepages-2Mi"] = limits["hugepages-2Mi"] = rng.choice(["64Mi", "512Mi"])
    if rng.random() < knobs.scalar:
        requests["example.com/widget"] = limits["example.com/widget"] = "1"
    container: dict = {"name": "app", "image": IMAGE, "resources": {"requests": requests}}
    if limits:
        container["resources"]["limits"] = limits
    labels = {"app": rng.choice(knobs.apps)}
    spec: dict = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if rng.random() < knobs.init:  # an init container: the larger of it and the app counts
        spec["initContainers"] = [{"name": "init", "image": IMAGE, "resources": {"requests": {
            "cpu": rng.choice(["100m", "4"]), "memory": rng.choice(["64Mi", "8Gi"])}}}]
    if rng.random() < knobs.sidecar:  # a sidecar: runs beside the app, so it adds up
        spec.setdefault("initContainers", []).append(
            {"name": "sidecar", "image": IMAGE, "restartPolicy": "Always",
             "resources": {"requests": {"cpu": rng.choice(["100m", "1"]), "memory": rng.choice(["128Mi", "2Gi"])}}})
    if rng.random() < knobs.pod_level:  # at least what the containers ask (validation), maybe more
        spec["resources"] = {"requests": _pod_level(rng, spec)}
    if rng.random() < knobs.selector:
        spec["nodeSelector"] = {"disk": rng.choice(["ssd", "hdd"])}
    if rng.random() < knobs.node_affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [_term(rng, nodes) for _ in range(rng.choice([1, 1, 2]))]}}}
    elif rng.random() < knobs.pin:  # one node by name: NodeAffinity's PreFilter narrows the nodes to it
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                    "values": [rng.choice(nodes)]}]}]}}}
    tolerations = []
    for key in TAINT_KEYS:
        if rng.random() < knobs.tolerate:
            toleration = rng.choice([{"key": key, "operator": "Exists"},
                                     {"key": key, "operator": "Equal", "value": rng.choice(["a", "b"])},
                                     {"key": key, "operator": "Exists", "effect": "NoExecute"}])
            tolerations.append(toleration)
    if tolerations:
        spec["tolerations"] = tolerations
    if rng.random() < knobs.port:
        container["ports"] = [{"containerPort": 80, "hostPort": rng.choice(PORTS), "protocol": "TCP"}]
    if rng.random() < knobs.spread:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": rng.choice(["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": labels["app"]}}}]
    pod_affinity = {}
    if rng.random() < knobs.affinity:
        pod_affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}, "topologyKey": "topology.kubernetes.io/zone"}]}
    if rng.random() < knobs.anti:
        pod_affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In",
                                                    "values": rng.sample(APPS, rng.randint(1, 2))}]},
            "topologyKey": rng.choice(["kubernetes.io/hostname", "topology.kubernetes.io/zone"])}]}
    if pod_affinity:
        spec.setdefault("affinity", {}).update(pod_affinity)
    template = None
    if rng.random() < knobs.claim:
        exactly: dict = {"deviceClassName": driver, "count": rng.choice([1, 1, 2])}
        template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": f"{name}-dev", "namespace": ns},
                    "spec": {"spec": {"devices": {"requests": [{"name": "req", "exactly": exactly}]}}}}
        spec["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": f"{name}-dev"}]
        container["resources"]["claims"] = [{"name": "dev"}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
           "spec": spec}
    return pod, template


def _mi(text: str) -> int:
    return int(_gi(text) * 1024)


def _pod_level(rng, spec: dict) -> dict:
    """Pod-level cpu and memory requests: the containers' sum (sidecars included) or the largest
    init container, whichever is more, plus a random margin."""
    running = [c for c in spec["containers"] + spec.get("initContainers", []) if c.get("restartPolicy") == "Always"
               or c in spec["containers"]]
    inits = [c for c in spec.get("initContainers", []) if c.get("restartPolicy") != "Always"]
    cpu = max([sum(_milli(c["resources"]["requests"]["cpu"]) for c in running)] +
              [_milli(c["resources"]["requests"]["cpu"]) for c in inits])
    memory = max([sum(_mi(c["resources"]["requests"]["memory"]) for c in running)] +
                 [_mi(c["resources"]["requests"]["memory"]) for c in inits])
    return {"cpu": f"{cpu + rng.choice([0, 500, 2000])}m", "memory": f"{memory + rng.choice([0, 512, 4096])}Mi"}


def _term(rng, nodes: list[str]) -> dict:
    """A node selector term: one or two expressions of every operator, or a matchFields on the
    node's name (one value: all validation allows)."""
    if rng.random() < 0.2:
        return {"matchFields": [{"key": "metadata.name", "operator": rng.choice(["In", "In", "NotIn"]),
                                 "values": [rng.choice(nodes)]}]}
    choices = [
        lambda: {"key": "topology.kubernetes.io/zone", "operator": "In",
                 "values": rng.sample(ZONES, rng.randint(1, 2))},
        lambda: {"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": [rng.choice(ZONES)]},
        lambda: {"key": "disk", "operator": "Exists"},
        lambda: {"key": "gpu", "operator": "DoesNotExist"},
        lambda: {"key": "gen", "operator": "Gt", "values": [str(rng.randint(1, 4))]},
        lambda: {"key": "gen", "operator": "Lt", "values": [str(rng.randint(2, 5))]},
    ]
    return {"matchExpressions": [rng.choice(choices)() for _ in range(rng.choice([1, 1, 2]))]}


# -- the cluster --------------------------------------------------------------------------------


def _items(plane, path: str) -> list[dict]:
    return plane.request("GET", path)["items"]


def _delete(plane, path: str) -> None:
    try:
        plane.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise


def clean_slate(plane) -> None:
    """Nothing but this file's next scenario may decide "0/N nodes": every node and pending pod the
    cluster has from earlier (other files' finished modules included) is deleted, with this file's
    pods, claims, slices and classes, and the test waits until they are gone."""
    nodes = [n["metadata"]["name"] for n in _items(plane, "/api/v1/nodes")]
    pods = [p for p in _items(plane, "/api/v1/pods")
            if p["metadata"]["namespace"].startswith(f"{PREFIX}-") or not p["spec"].get("nodeName")]
    claims = [c for c in _items(plane, "/apis/resource.k8s.io/v1/resourceclaims")
              if c["metadata"]["namespace"].startswith(f"{PREFIX}-")]
    slices = [s["metadata"]["name"] for s in _items(plane, "/apis/resource.k8s.io/v1/resourceslices")
              if s["spec"].get("driver", "").startswith(PREFIX) or s["spec"].get("nodeName") in nodes]
    classes = [c["metadata"]["name"] for c in _items(plane, "/apis/resource.k8s.io/v1/deviceclasses")
               if c["metadata"]["name"].startswith(PREFIX)]
    runtimes = [c["metadata"]["name"] for c in _items(plane, "/apis/node.k8s.io/v1/runtimeclasses")
                if c["metadata"]["name"].startswith(PREFIX)]
    paths = [f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}" for p in pods]
    for pod, path in zip(pods, paths):
        if FINALIZER in (pod["metadata"].get("finalizers") or []):
            plane.request("PATCH", path, {"metadata": {"finalizers": None}},
                          content_type="application/merge-patch+json")
    paths += [f"/apis/resource.k8s.io/v1/namespaces/{c['metadata']['namespace']}/resourceclaims/"
              f"{c['metadata']['name']}" for c in claims]
    paths += [f"/apis/resource.k8s.io/v1/resourceslices/{s}" for s in slices]
    paths += [f"/apis/resource.k8s.io/v1/deviceclasses/{c}" for c in classes]
    paths += [f"/apis/node.k8s.io/v1/runtimeclasses/{c}" for c in runtimes]
    paths += [f"/api/v1/nodes/{n}" for n in nodes]
    for path in paths:
        _delete(plane, path)
    wait_for("the previous scenario's objects to be gone", lambda: all(plane.absent(p) for p in paths), timeout=60)


def up_to_preemption(message: str) -> str:
    """FitError.Error() with the PostFilter part (" preemption: ...") taken off."""
    at = message.find(" preemption:")
    return message if at < 0 else message[:at]


def judge(mine, got: dict, said, *, unclaimed_ok: bool = False) -> tuple[list[str], str | None]:
    """What is wrong with the explainer's answer (``mine``) about a pod the scheduler has decided
    (``got``), and the scheduler's message up to " preemption:". A bound pod: no message, and its
    node called fitting. An unschedulable one: the same message, no node called fitting, and
    ``said()`` (what `explain pod` on the live pod says) the same too. ``unclaimed_ok``: an answer
    that claims no message (``message_known`` false, a notEvaluated entry saying why) is right too."""
    where = got["spec"].get("nodeName")
    condition = scheduled_false(got) if not where else None
    theirs = up_to_preemption(condition.get("message", "")) if condition else None
    problems = []
    undetermined = [n.node for n in mine.nodes if n.fits is None]
    if undetermined and not mine.not_evaluated:
        problems.append(f"nodes {undetermined} undetermined without a notEvaluated entry")
    unclaimed = unclaimed_ok and not mine.message_known
    if unclaimed and not mine.not_evaluated:
        problems.append("no message claimed, and no notEvaluated entry says why")
    fitting = [n.node for n in mine.nodes if n.fits]
    if where:
        if mine.message is not None:
            problems.append(f"bound to {where}, but the explainer says {mine.message!r}")
        if where not in fitting and not unclaimed:
            verdict = next((f"{n.fits} {n.reasons}" for n in mine.nodes if n.node == where), "absent")
            problems.append(f"bound to {where}, which the explainer calls {verdict}")
        return problems, theirs
    if condition.get("reason") != "Unschedulable":
        problems.append(f"PodScheduled reason {condition.get('reason')}: {condition.get('message')}")
    if mine.message != theirs and not unclaimed:
        problems.append("messages differ")
    if fitting and not unclaimed:
        problems.append(f"the scheduler refused every node, the explainer calls {fitting} fitting")
    told = said()
    if told != (None if unclaimed else theirs):
        problems.append(f"explain pod on the live pod says {told!r}")
    return problems, theirs


def cli_message(dra, name: str, kubeconfig: str, namespace: str) -> str | None:
    """``scheduling.message`` of `kubectl dra explain pod` on the live pod."""
    cli = dra("explain", "pod", name, "--kubeconfig", kubeconfig, "-n", namespace, "-o", "json")
    try:
        return cli.json()["scheduling"]["message"]
    except (ValueError, KeyError, TypeError):
        return f"(no scheduling.message: {cli!r})"


def record_of(seed: int, pod: str, mine, where: str | None, theirs: str | None, problems: list[str]) -> dict:
    """One pending pod's line of the report: what the scheduler did, what the explainer said."""
    return {"seed": seed, "pod": pod, "scheduler": theirs if not where else f"bound to {where}",
            "explainer": mine.message, "match": not problems, "problems": problems,
            "nodes": {n.node: (n.fits, n.reasons, [u.plugin for u in n.undetermined]) for n in mine.nodes},
            "not_evaluated": [(u.plugin, u.why) for u in mine.not_evaluated if u.plugin != "DefaultPreemption"]}


def mismatch_report(mismatches: list[dict]) -> str:
    return "\n\n".join(
        f"seed {r['seed']} ({r['pod']}): {'; '.join(r['problems'])}\n  scheduler: {r['scheduler']}\n"
        f"  explainer: {r['explainer']}\n  nodes: {r.get('nodes')}\n  notEvaluated: {r['not_evaluated']}"
        for r in mismatches)


def explain_before(plane, kubeconfig: str, pod: dict):
    """What the explainer says about ``pod`` as the server would create it, from a live read."""
    from kubectl_dra.scheduling.explain import explain_scheduling
    from kubectl_dra.scheduling.reads import scheduling_reads

    try:
        dry = plane.request("POST", f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods?dryRun=All", pod)
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"the server refuses {pod['metadata']['name']}: {exc.read().decode()}") from None
    model = parse_object(dry)
    source = open_source(KubeOptions(kubeconfig=kubeconfig)).source
    inventory = source.read(scheduling_reads(model, model.namespace))
    return explain_scheduling(model, inventory)


# -- the check ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plane(full_cluster):
    yield full_cluster
    clean_slate(full_cluster)


def test_the_explainer_writes_the_schedulers_message(plane, dra, tmp_path, capsys):
    records, mismatches = [], []
    counts = {"unschedulable": 0, "bound": 0, "undetermined_nodes": 0}
    refusals: Counter = Counter()  # plugin (as the explainer names it) -> nodes it refused, on unschedulable pods
    began = time.monotonic()
    for seed in _seeds():
        clean_slate(plane)
        world = scenario(seed)
        ns = world["namespace"]
        if plane.absent(f"/api/v1/namespaces/{ns}"):
            plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": ns}})
        load(plane, [*world["runtime"], *world["nodes"], world["class"], *world["slices"], *world["bound"],
                     *world["templates"]])
        time.sleep(0.5)  # the scheduler's informers see the new nodes and pods
        kubeconfig = str(plane.kubeconfig(tmp_path / f"kubeconfig-{seed}", namespace=ns))
        for pod in world["pending"]:
            name = pod["metadata"]["name"]
            mine = explain_before(plane, kubeconfig, pod)
            load(plane, [pod])
            got = settle(plane, ns, name)
            where = got["spec"].get("nodeName")
            problems, theirs = judge(mine, got, lambda: cli_message(dra, name, kubeconfig, ns))
            counts["undetermined_nodes"] += sum(1 for n in mine.nodes if n.fits is None)
            counts["bound" if where else "unschedulable"] += 1
            if not where:
                for n in mine.nodes:
                    refusals[n.plugin] += 1
                    if n.plugin == "DynamicResources" and "Insufficient memory" in n.reasons:
                        refusals["DynamicResources: Insufficient memory (node-allocatable mapping)"] += 1
            record = {**record_of(seed, f"{ns}/{name}", mine, where, theirs, problems), "theme": world["theme"]}
            records.append(record)
            if problems:
                mismatches.append(record)
    with capsys.disabled():
        print(f"\npending oracle: {len({r['seed'] for r in records})} scenarios, {len(records)} pending pods "
              f"({counts['unschedulable']} unschedulable, {counts['bound']} bound), "
              f"{len(records) - len(mismatches)} matched, {counts['undetermined_nodes']} undetermined node verdicts, "
              f"{time.monotonic() - began:.0f}s")
        print(f"  nodes refused, by plugin: {dict(sorted(refusals.items(), key=str))}")
        for r in records:
            print(f"  seed {r['seed']:>3} {r['theme']:<8} {'ok ' if r['match'] else 'BAD'} {r['scheduler']}")
    assert not mismatches, mismatch_report(mismatches)
    if _seeds() == SEEDS:  # the listed seeds reach every filter, and mostly end Unschedulable
        assert counts["unschedulable"] >= 25 and counts["bound"] >= 3, counts
        assert all(refusals[p] >= 2 for p in COVERED), refusals


COVERED = ("NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
           "PodTopologySpread", "InterPodAffinity", "DynamicResources",
           "DynamicResources: Insufficient memory (node-allocatable mapping)")
