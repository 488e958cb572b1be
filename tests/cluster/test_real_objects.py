"""The examples and fixtures are real objects: the v1.37.2 API server accepts every one as written,
in every API version it claims, statuses through the status subresource. Then every command's
output against the live server equals its output on the snapshot `kubectl dra snapshot` saved."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from controlplane import KARPENTER_CRDS
from loader import load
from snapshot_objects import EXAMPLE, raw_objects  # noqa: F401 - the cluster tier imports them from here

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "objects"


def crds() -> list[dict]:
    ours = [d for d in yaml.safe_load_all((ROOT / "manifests" / "agent" / "crd.yaml").read_text()) if d]
    karpenter = [d for f in sorted(KARPENTER_CRDS.glob("karpenter.sh_*.yaml"))
                 for d in yaml.safe_load_all(f.read_text()) if d]
    return ours + karpenter


def stored_as_written(plane, written: list[dict], dropped: tuple[str, ...] = ()) -> None:
    """Read every object back in the version it claims: what was written is what is stored (spec
    and status), apart from fields the server adds, the UIDs it assigned, and the ``dropped``
    paths (regular expressions) a newer server no longer keeps."""
    from kubectl_dra.model.registry import by_group_kind

    uids = _uids(written)
    for obj in written:
        kind, meta = obj["kind"], obj["metadata"]
        group, _, version = obj["apiVersion"].rpartition("/")
        model = by_group_kind().get((group, kind))
        plural = model.PLURAL if model else {"Namespace": "namespaces", "RuntimeClass": "runtimeclasses"}[kind]
        namespaced = model.NAMESPACED if model else False
        where = f"/namespaces/{meta['namespace']}" if namespaced else ""
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        stored = plane.request("GET", f"{base}{where}/{plural}/{meta['name']}")
        for section in ("spec", "status"):
            if section in obj:
                lost = [p for p in differences(obj[section], stored.get(section), uids, section)
                        if not any(re.fullmatch(pattern, p) for pattern in dropped)]
                assert not lost, f"{kind} {meta.get('namespace', '')}/{meta['name']} ({obj['apiVersion']}): {lost}"


def test_every_example_object_is_accepted_as_written(example_cluster):
    stored_as_written(example_cluster[0], raw_objects(EXAMPLE))


def _uids(objects) -> set[str]:
    return {o["metadata"]["uid"] for o in objects if o["metadata"].get("uid")}


def differences(want, got, ignore_values: set[str], path: str = "") -> list[str]:
    """Paths where a written field is not stored with the same value (added defaults are fine)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [path or "."]
        return [d for k, v in want.items() for d in differences(v, got.get(k), ignore_values, f"{path}.{k}")]
    if isinstance(want, list):
        if not isinstance(got, list) or len(want) != len(got):
            return [path]
        return [d for i, (w, g) in enumerate(zip(want, got)) for d in differences(w, g, ignore_values, f"{path}[{i}]")]
    if isinstance(want, str) and want in ignore_values:
        return []  # a UID: the server assigned a new one and the loader rewrote the reference
    return [] if want == got or str(want) == str(got) else [path]


GONE_IN_1_37 = {"scheduling.k8s.io/v1alpha2"}  # 1.36's PodGroup version: v1.37.2 serves v1beta1, v1alpha3
DROPPED_BY_1_37 = (  # KEP-5517 alpha1 fields, tombstoned in 1.37: a 1.37 server drops them
    r"status\.nodeAllocatableResourceClaimStatuses\[\d+\]\.resources",
    r"spec\.devices\[\d+\](\.basic)?\.nodeAllocatableResourceMappings",
)


@pytest.mark.parametrize("generation", ["v1", "v1beta1", "v1beta2"])
def test_fixture_objects_load_in_the_version_they_claim(fresh_apiserver, generation):
    """Each generation's fixtures, as written, into an API server of its own (they share names).
    Objects in a version v1.37.2 no longer serves are set apart, and that set is pinned."""
    plane = fresh_apiserver(generation)
    objects = raw_objects(FIXTURES / generation)
    if generation == "v1beta2":  # its slice targets node-a of the v1beta1 set
        objects += [o for o in raw_objects(FIXTURES / "v1beta1") if o["kind"] == "Node"]
    served = {"v1"} | {f"{g['name']}/{v['version']}" for g in plane.request("GET", "/apis")["groups"]
                       for v in g["versions"]}
    unserved = {o["apiVersion"] for o in objects if o["apiVersion"] not in served}
    assert unserved <= GONE_IN_1_37, unserved
    accepted = [o for o in objects if o["apiVersion"] in served]
    load(plane, crds() + accepted)
    stored_as_written(plane, accepted, DROPPED_BY_1_37 if generation != "v1" else ())  # v1beta*: 1.36 era


# ---- live equals offline --------------------------------------------------------------------

AGE = re.compile(r"\b(\d+[smhdy])+\b")
COMMANDS = [
    ["claims", "-A"], ["claims", "-A", "-o", "wide"], ["claims", "-A", "-o", "json"],
    ["explain", "claim", "eval-gpu", "-n", "default", "-o", "json"], ["explain", "claim", "shared-gpu", "-n", "ml"],
    ["explain", "pod", "embedder", "-n", "ml", "-o", "json"], ["explain", "pod", "debug-shell", "-n", "ml"],
    ["explain", "node", "worker-cpu-1", "-o", "json"], ["explain", "node", "worker-gpu-1"],
    ["overlays"], ["overlays", "-o", "json"], ["verify", "-A", "-o", "wide"],
]


def normalized(text: str) -> str:
    text = re.sub(r'"(creationTimestamp|uid|resourceVersion|apiServerSource)": "[^"]*"', r'"\1": "-"', text)
    return AGE.sub("<age>", text)


def test_live_equals_offline(example_cluster, tmp_path, dra):
    plane, kubeconfig = example_cluster
    bundle = tmp_path / "bundle"
    saved = dra("snapshot", "-A", "-o", str(bundle), "--kubeconfig", kubeconfig)
    assert saved.exit_code == 0, saved
    for command in COMMANDS:
        live = dra(*command, "--kubeconfig", kubeconfig)
        offline = dra(*command, "--snapshot", str(bundle))
        assert (live.exit_code, normalized(live.stdout)) == (offline.exit_code, normalized(offline.stdout)), command
        assert live.stdout, command
