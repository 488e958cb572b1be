"""The example cluster on the API servers of 1.34, 1.35 and 1.36, each with its own defaults.

Each server is shown the example cluster's objects (examples/cluster) in the versions it serves,
with every node's kubelet at the server's release (a kubelet may not be newer than its API
server). Then:
- discovery: which ``resource.k8s.io`` and ``scheduling.k8s.io`` versions and kinds each serves by
  default, and which version this tool reads each kind in (docs/kubernetes/versions.md §2);
- shapes: the fields each server does not keep are exactly the ones its release lacks or gates off
  by default (docs/kubernetes/versions.md §3), nothing more;
- answers: every command read live from the older server says what the same command says offline
  on the 1.37 objects with those fields taken away, apart from the version it names. So a field a
  release lacks reads as absent, never as a wrong default, and nothing else about an older server
  changes an answer.
"""

from __future__ import annotations

import copy
import shutil
import json
import re
from pathlib import Path

import pytest
import yaml
from loader import _swap, load

from kubectl_dra.kube.snapshot import MARKER
from test_real_objects import EXAMPLE, _uids, crds, differences, raw_objects

ROOT = Path(__file__).resolve().parents[2]

# group -> the versions each release serves with its defaults (preferred first), as discovery shows
SERVED = {
    "v1.34.4": {"resource.k8s.io": ["v1"], "scheduling.k8s.io": ["v1"]},
    "v1.35.4": {"resource.k8s.io": ["v1"], "scheduling.k8s.io": ["v1"]},
    "v1.36.3": {"resource.k8s.io": ["v1"], "scheduling.k8s.io": ["v1"]},
}

# Fields of the example objects a release does not keep: (kind, path with [*] for indexes). Each is
# in docs/kubernetes/versions.md §3 with its gate and the upstream file it is declared in.
_CAPACITY = {("ResourceSlice", "spec.devices[*].allowMultipleAllocations"),
             ("ResourceSlice", "spec.devices[*].capacity.dra.memory/memory.requestPolicy"),
             ("ResourceClaimTemplate", "spec.spec.devices.requests[*].exactly.capacity"),
             ("ResourceClaim", "spec.devices.requests[*].exactly.capacity"),
             ("ResourceClaim", "status.allocation.devices.results[*].consumedCapacity"),
             ("ResourceClaim", "status.allocation.devices.results[*].shareID")}
_NEWER = {("ResourceSlice", "spec.devices[*].nodeAllocatableResources"),
          ("Pod", "status.nodeAllocatableResourceClaimStatuses"),
          ("Pod", "spec.schedulingGroup"), ("Job", "spec.template.spec.schedulingGroup")}
DROPPED = {
    "v1.34.4": _NEWER | _CAPACITY | {
        ("ResourceSlice", "spec.devices[*].taints"),
        ("Node", "status.declaredFeatures"),
        ("ResourceClaim", "status.allocation.allocationTimestamp"),
        ("Pod", "status.containerStatuses[*].allocatedResourcesStatus")},
    "v1.35.4": _NEWER | _CAPACITY | {
        ("ResourceSlice", "spec.devices[*].taints"),
        ("Pod", "status.containerStatuses[*].allocatedResourcesStatus")},
    "v1.36.3": _NEWER,
}
# kinds (apiVersion, kind) of the example a release does not serve with its defaults: set apart
SET_APART = {
    "v1.34.4": {("scheduling.k8s.io/v1beta1", "PodGroup")},
    "v1.35.4": {("scheduling.k8s.io/v1beta1", "PodGroup")},
    "v1.36.3": {("scheduling.k8s.io/v1beta1", "PodGroup")},
}


# kinds this tool reads that the release does not serve with its defaults (beside SET_APART's)
UNSERVED_KINDS = {"v1.34.4": {"DeviceTaintRule"}, "v1.35.4": {"DeviceTaintRule"}, "v1.36.3": {"DeviceTaintRule"}}


def served_group_versions(plane) -> set[str]:
    return {"v1"} | {f"{g['name']}/{v['version']}" for g in plane.request("GET", "/apis")["groups"]
                     for v in g["versions"]}


def at_release(objects: list[dict], version: str) -> list[dict]:
    """The example's objects as a cluster of ``version`` has them: its nodes' kubelets at that release."""
    out = copy.deepcopy(objects)
    for obj in out:
        if obj["kind"] == "Node":
            obj.setdefault("status", {}).setdefault("nodeInfo", {})["kubeletVersion"] = version
    return out


def without(objects: list[dict], dropped: set[tuple[str, str]]) -> list[dict]:
    """The objects with the ``dropped`` fields taken away (what a release without them stores)."""
    out = copy.deepcopy(objects)
    for obj in out:
        for kind, path in dropped:
            if obj["kind"] == kind:
                _remove(obj, re.findall(r"[^.\[\]]+|\[\*\]", path.replace("dra.memory/memory", "dra\0memory/memory")))
    return out


def _remove(node, steps: list[str]) -> None:
    step, rest = steps[0].replace("\0", "."), steps[1:]
    targets = node if step == "[*]" else None
    if targets is not None:
        for item in targets if isinstance(targets, list) else []:
            _remove(item, rest) if rest else None
        return
    if not isinstance(node, dict) or step not in node:
        return
    if rest:
        _remove(node[step], rest)
    else:
        del node[step]


def normalized_path(path: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", path.lstrip("."))


@pytest.fixture(scope="module")
def skew_cluster(skew_plane, tmp_path_factory):
    """The version's control plane with the example cluster loaded as it takes it, a user's
    kubeconfig (namespace ml), and the objects as written."""
    version = skew_plane.version
    served = served_group_versions(skew_plane)
    ours = ("karpenter.sh/", "kubectl-dra.io/")  # CRDs: any release serves them as their CRDs say
    objects = at_release(raw_objects(EXAMPLE), version)
    accepted = [o for o in objects if o["apiVersion"] in served or o["apiVersion"].startswith(ours)]
    set_apart = {(o["apiVersion"], o["kind"]) for o in objects if o not in accepted}
    uids = load(skew_plane, crds() + accepted)
    kubeconfig = skew_plane.kubeconfig(tmp_path_factory.mktemp(f"user-{version}") / "kubeconfig", namespace="ml")
    return skew_plane, str(kubeconfig), accepted, set_apart, uids


def test_discovery_serves_what_the_release_serves_by_default(skew_cluster):
    plane = skew_cluster[0]
    groups = {g["name"]: g for g in plane.request("GET", "/apis")["groups"]}
    shown = {name: [g["preferredVersion"]["version"]] + [v["version"] for v in g["versions"]
                                                         if v["version"] != g["preferredVersion"]["version"]]
             for name, g in groups.items() if name in SERVED[plane.version]}
    assert shown == SERVED[plane.version]
    assert plane.request("GET", "/version")["gitVersion"] == plane.version


def test_the_release_keeps_every_field_but_the_ones_it_lacks(skew_cluster):
    plane, _, accepted, set_apart, _ = skew_cluster
    from kubectl_dra.model.registry import by_group_kind

    assert set_apart == SET_APART[plane.version]
    lost: set[tuple[str, str]] = set()
    uids = _uids(accepted)  # the server assigned new ones, and the loader rewrote references to them
    for obj in accepted:
        group, _, version = obj["apiVersion"].rpartition("/")
        model = by_group_kind().get((group, obj["kind"]))
        if model is None:
            continue
        meta = obj["metadata"]
        where = f"/namespaces/{meta['namespace']}" if model.NAMESPACED else ""
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        stored = plane.request("GET", f"{base}{where}/{model.PLURAL}/{meta['name']}")
        for section in ("spec", "status"):
            if section in obj:
                lost |= {(obj["kind"], normalized_path(p))
                         for p in differences(obj[section], stored.get(section), uids, section)}
    expected = DROPPED[plane.version]
    assert lost == expected, f"also not kept: {sorted(lost - expected)}; kept after all: {sorted(expected - lost)}"


AGE = re.compile(r"\b(\d+[smhdy])+\b|<invalid>")  # the server's clock made these objects, not the example's
COMMANDS = [
    ["claims", "-A"], ["claims", "-A", "-o", "wide"], ["claims", "-A", "-o", "json"],
    ["explain", "claim", "eval-gpu", "-n", "default", "-o", "json"], ["explain", "claim", "shared-gpu", "-n", "ml"],
    ["explain", "claim", "trainer-gpus-hd295", "-n", "ml"],
    ["explain", "pod", "embedder", "-n", "ml", "-o", "json"], ["explain", "pod", "debug-shell", "-n", "ml"],
    ["explain", "pod", "llm-inference-7c9d8b6f5d-r772r", "-n", "ml"],
    ["explain", "pod", "feature-store", "-n", "ml", "-o", "json"],
    ["explain", "node", "worker-cpu-1", "-o", "json"], ["explain", "node", "worker-gpu-1"],
    ["taints"], ["taints", "-o", "json"], ["devices"], ["devices", "-o", "json"],
    ["verify", "-A", "-o", "wide"],
]


def normalized(text: str) -> str:
    """Timestamps, UIDs and ages the servers made, the problems (compared on their own) and column
    widths (an age's width) taken out."""
    text = re.sub(r'"(creationTimestamp|uid|resourceVersion|apiServerSource)": "[^"]*"', r'"\1": "-"', text)
    if text.startswith("{"):
        doc = json.loads(text)
        doc.pop("problems", None)
        text = json.dumps(doc, indent=2)
    return re.sub(r"[ \t]+", " ", AGE.sub("<age>", text))


def test_every_answer_is_the_1_37_answer_on_what_the_release_keeps(skew_cluster, tmp_path, dra):
    """The reference is the example with the fields the release lacks taken away, and the marker
    of a ``kubectl dra snapshot`` of the live server (which kinds it could read, its version)."""
    plane, kubeconfig, accepted, set_apart, uids = skew_cluster
    taken = tmp_path / "taken"
    saved = dra("snapshot", "-A", "-o", str(taken), "--kubeconfig", kubeconfig)
    assert saved.exit_code == 0, saved
    marker = yaml.safe_load((taken / MARKER).read_text())
    assert marker["serverVersion"] == plane.version
    reference = tmp_path / "reference"
    reference.mkdir()
    kept = _swap(without(accepted, DROPPED[plane.version]), uids)  # with the UIDs the server gave them
    (reference / "objects.yaml").write_text(yaml.safe_dump_all(kept, sort_keys=False))
    (reference / MARKER).write_text(yaml.safe_dump(marker))
    shutil.copy(taken / "namespaces.yaml", reference)  # the example has none: the loader made them
    differ = []
    for command in COMMANDS:
        live = dra(*command, "--kubeconfig", kubeconfig)
        offline = dra(*command, "--snapshot", str(reference))
        assert live.stdout, (command, live)
        if (live.exit_code, normalized(live.stdout)) != (offline.exit_code, normalized(offline.stdout)):
            differ.append((command, live.exit_code, offline.exit_code,
                           _diff(offline.stdout, live.stdout) + offline.stderr[:600]))
        if "json" in command:  # what could not be read live: only the kinds this release does not serve
            unserved = {k for a, k in set_apart} | UNSERVED_KINDS[plane.version]
            assert all(re.match(rf"cannot read ({'|'.join(unserved)}) objects: ", p) for p in live.json()["problems"]), \
                (command, live.json()["problems"])
    assert not differ, "\n\n".join(f"{c}: exit {a} live, {b} offline\n{d}" for c, a, b, d in differ)


def _diff(a: str, b: str) -> str:
    import difflib

    return "\n".join(difflib.unified_diff(normalized(a).splitlines(), normalized(b).splitlines(), "1.37 answer",
                                          "live", lineterm="", n=1))[:4000]


def test_each_answer_names_the_release_it_followed(skew_cluster, dra):
    """On an older cluster every prediction says so once: the releases read (API server, kubelets),
    the older rules applied, and on stderr beside a text view."""
    plane, kubeconfig = skew_cluster[0], skew_cluster[1]
    minor = int(plane.version.split(".")[1])
    pending = dra("explain", "pod", "feature-store", "-n", "ml", "-o", "json", "--kubeconfig", kubeconfig).json()
    versions = pending["versions"]
    assert (versions["modelledOn"], versions["apiServer"], versions["apiServerSource"]) == \
        ("v1.37.2", plane.version, "GET /version")
    assert set(versions["kubelets"]) == {plane.version}
    declared = any("NodeDeclaredFeatures is not in the default profile" in line for line in versions["applied"])
    assert declared == (minor < 36), versions["applied"]
    assert pending["scheduling"]["profile"] == f"the default profile of kube-scheduler 1.{minor} (no --scheduler-config given)"
    bound = dra("explain", "pod", "embedder", "-n", "ml", "-o", "json", "--kubeconfig", kubeconfig).json()
    assert bound["nodeOptions"]["kubeletVersion"] == plane.version
    # its node's cgroup driver is systemd (the default); no DRA amounts reach a server of this release
    assert [line.split(":")[0] for line in bound["versions"]["applied"]] == (["kubelet 1.34"] if minor == 34 else [])
    text = dra("explain", "pod", "feature-store", "-n", "ml", "--kubeconfig", kubeconfig)
    notes = [line for line in text.stderr.splitlines() if line.startswith("note: modelled on")]
    assert notes == [f"note: modelled on Kubernetes v1.37.2; this cluster runs API server {plane.version}, "
                     f"kubelet {plane.version} (3 nodes)"], text.stderr
    assert "note: modelled on" not in text.stdout
    assert f"every kube-scheduler 1.{minor} filter" in text.stdout or f"kube-scheduler 1.{minor}" in text.stdout
