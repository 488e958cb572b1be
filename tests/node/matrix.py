"""The pods the node tier runs on the real node: one for every rule of ``kubectl_dra/cgroups``.

QoS classes, pod-level resources, init and sidecar containers, fractional, limit-only and
zero-request CPU, memory limits that are not page multiples, 2Mi and 1Gi huge pages, a mixed pod
with exclusive CPUs (static CPU manager), and DRA claims whose devices map to node cpu, memory and
huge pages (KEP-5517): a mapping, per-pod and per-container overhead, one claim shared by two
containers, and a pod with two claims; and a pod asking for ``example.com/gpu``, an extended
resource a DeviceClass provides (KEP-5004), served by the claim the scheduler makes for it. The
devices are published by the node's DRA plugin.

The node has 4 CPUs, one reserved (3 allocatable), so the requests below add up to less than that.
"""

from __future__ import annotations

from realnode import DRIVER, TEST_IMAGE

NAMESPACE = "matrix"
NETWORK_INTERFACE = "kdra-net0"  # the host interface the ``network`` device names (as dranet's devices do)
CLASS = DRIVER
EXTENDED_CLASS, EXTENDED_RESOURCE = "node-tier-gpu", "example.com/gpu"  # the class providing it, and the name
CLAIMS = 5  # the claims the matrix's pods hold: 4 from templates, 1 the scheduler made (dra-extended)


def devices() -> list[dict]:
    """resource.k8s.io/v1 Devices: ``mapped`` (cpu 100m and memory 64Mi per device), ``overhead``
    (memory 32Mi per pod plus 16Mi per container, cpu 20m per pod), ``hugepages`` (4Mi of 2Mi pages
    per device plus 8Mi memory per pod and 8Mi per container), one ``network`` device with no
    node-allocatable amounts (the network check's), and one ``plain`` device, the extended resource's."""
    def device(name: str, kind: str, resources: dict) -> dict:
        return {"name": name, "attributes": {"kind": {"string": kind}}, "nodeAllocatableResources": resources}

    mapped = {"cpu": {"mapping": {"deviceMultiplier": "100m"}}, "memory": {"mapping": {"deviceMultiplier": "64Mi"}}}
    overhead = {"memory": {"overhead": {"perPod": "32Mi", "perContainer": "16Mi"}},
                "cpu": {"overhead": {"perPod": "20m"}}}
    hugepages = {"hugepages-2Mi": {"mapping": {"deviceMultiplier": "4Mi"}},
                 "memory": {"overhead": {"perPod": "8Mi", "perContainer": "8Mi"}}}
    network = {"name": "net-0", "attributes": {"kind": {"string": "network"},
                                               "dra.net/ifName": {"string": NETWORK_INTERFACE}}}
    return ([device(f"mapped-{i}", "mapped", mapped) for i in range(4)]
            + [device(f"overhead-{i}", "overhead", overhead) for i in range(4)]
            + [device(f"hugepages-{i}", "hugepages", hugepages) for i in range(2)] + [network]
            + [{"name": "plain-0", "attributes": {"kind": {"string": "plain"}}}])


def device_class() -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def extended_class() -> dict:
    """The DeviceClass that provides ``example.com/gpu`` through DRA: the node does not advertise it."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": EXTENDED_CLASS},
            "spec": {"extendedResourceName": EXTENDED_RESOURCE, "selectors": [{"cel": {"expression": (
                f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].kind == "plain"')}}]}}


def claim_template(kind: str, namespace: str = NAMESPACE) -> dict:
    """A template for one device of a kind (one claim per pod, as mapped devices require)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": kind, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "dev", "exactly": {
                "deviceClassName": CLASS,
                "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].kind == "{kind}"'}}]}}]}}}}


def container(name: str, requests: dict | None = None, limits: dict | None = None, claims: tuple[str, ...] = (),
              command: tuple[str, ...] = ("sleep", "1000000"), restart_policy: str | None = None) -> dict:
    spec = {"name": name, "image": TEST_IMAGE, "imagePullPolicy": "Never", "command": ["/bin/" + command[0],
                                                                                          *command[1:]]}
    resources = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    if claims:
        resources["claims"] = [{"name": claim} for claim in claims]
    if resources:
        spec["resources"] = resources
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


def pod(name: str, containers: list[dict], *, init: list[dict] = (), claims: dict[str, str] | None = None,
        resources: dict | None = None, namespace: str = NAMESPACE) -> dict:
    """A pod on the host network (the node has only a loopback CNI), without DNS or tokens."""
    spec = {"hostNetwork": True, "dnsPolicy": "Default", "terminationGracePeriodSeconds": 1,
            "automountServiceAccountToken": False, "containers": containers}
    if init:
        spec["initContainers"] = list(init)
    if claims:
        spec["resourceClaims"] = [{"name": claim, "resourceClaimTemplateName": template}
                                  for claim, template in claims.items()]
    if resources:
        spec["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pods() -> list[dict]:
    both = lambda cpu, memory, **extra: {"cpu": cpu, "memory": memory, **extra}  # noqa: E731
    return [
        pod("guaranteed", [container("app", both("150m", "128Mi", **{"hugepages-2Mi": "8Mi"}),
                                     both("150m", "128Mi", **{"hugepages-2Mi": "8Mi"}))]),
        pod("burstable", [container("app", both("250m", "64Mi"), both("750m", "192Mi"))]),
        pod("besteffort", [container("app")]),
        pod("pod-level", [container("inherits"), container("own", both("100m", "32Mi"), both("200m", "64Mi"))],
            resources={"requests": both("200m", "96Mi"), "limits": both("400m", "160Mi")}),
        pod("init-sidecar", [container("main", both("100m", "64Mi"), both("200m", "128Mi"))],
            init=[container("log", both("50m", "32Mi"), both("100m", "48Mi"), restart_policy="Always"),
                  container("setup", both("150m", "64Mi"), both("150m", "64Mi"), command=("true",))]),
        pod("cpu-limit-only", [container("limit-only", {"memory": "32Mi"}, {"cpu": "150m", "memory": "64Mi"}),
                               container("zero-request", {"cpu": "0"}, {"cpu": "100m"})]),
        pod("odd-memory", [container("app", both("111m", "50000000"), both("333m", "100000000"))]),
        pod("hugepages-1g", [container("app", both("100m", "64Mi", **{"hugepages-1Gi": "1Gi"}),
                                       both("100m", "64Mi", **{"hugepages-1Gi": "1Gi"}))]),
        pod("exclusive", [container("pinned", both("1", "64Mi"), both("1", "64Mi")),
                          container("shared", both("50m", "32Mi"), both("50m", "32Mi"))]),
        pod("dra-mapped", [container("app", both("100m", "64Mi"), both("200m", "128Mi"), claims=("dev",))],
            claims={"dev": "mapped"}),
        pod("dra-shared", [container("a", both("50m", "32Mi"), both("100m", "64Mi"), claims=("dev",)),
                           container("b", both("50m", "32Mi"), both("100m", "64Mi"), claims=("dev",))],
            claims={"dev": "overhead"}),
        pod("dra-two-claims", [container("main", both("100m", "64Mi"), both("200m", "128Mi"), claims=("cpu", "pages")),
                               container("side", both("50m", "32Mi"), both("100m", "64Mi"), claims=("pages",))],
            claims={"cpu": "mapped", "pages": "hugepages"}),
        pod("dra-extended", [container("app", both("100m", "64Mi", **{EXTENDED_RESOURCE: "1"}),
                                       both("200m", "128Mi", **{EXTENDED_RESOURCE: "1"}))]),
    ]


def objects() -> list[dict]:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    return [namespace, device_class(), extended_class(), *(claim_template(k) for k in ("mapped", "overhead", "hugepages")), *pods()]


def names() -> set[str]:
    return {p["metadata"]["name"] for p in pods()}
