"""How `explain claim|pod NAME` finds its object: the context's namespace, -n, or -A (the one
namespace that holds NAME; two is a question back to the user, none is "not found in any")."""

from __future__ import annotations

import yaml
from builders import claim, pod, reserved_pod, resource_slice

GPU = "gpu.example.com"


def snapshot(tmp_path):
    web = pod("web", "default", claims={"g": "shared"})
    objects = [web, resource_slice("worker-1", GPU, ["gpu-0", "gpu-1", "gpu-2"]),
               claim("shared", "default", devices=[(GPU, "worker-1", "gpu-0")], reserved_for=[reserved_pod(web)]),
               claim("twin", "ml", devices=[(GPU, "worker-1", "gpu-1")]),
               claim("twin", "batch", devices=[(GPU, "worker-1", "gpu-2")])]
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all(objects))
    return str(tmp_path)


def test_all_namespaces_finds_the_one_namespace_that_holds_it(tmp_path, dra):
    snap = snapshot(tmp_path)
    result = dra("explain", "claim", "shared", "-A", "--snapshot", snap, "-o", "json")
    assert result.exit_code == 0, result
    assert result.json()["claim"]["namespace"] == "default"
    assert [c["pod"] for c in result.json()["consumers"]] == ["default/web"]  # its pods were read in its namespace
    by_pod = dra("explain", "pod", "web", "-A", "--snapshot", snap, "-o", "json")
    assert by_pod.exit_code == 0 and by_pod.json()["pod"]["namespace"] == "default"
    through = dra("explain", "claim", "--pod", "web", "-A", "--snapshot", snap, "-o", "json")
    assert through.exit_code == 0 and through.json()["claim"]["name"] == "shared"


def test_all_namespaces_with_two_matches_asks_which(tmp_path, dra):
    result = dra("explain", "claim", "twin", "-A", "--snapshot", snapshot(tmp_path))
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == 'error: resourceclaim "twin" exists in namespaces batch, ml: choose one with -n\n'


def test_all_namespaces_without_a_match(tmp_path, dra):
    snap = snapshot(tmp_path)
    result = dra("explain", "claim", "nope", "-A", "--snapshot", snap)
    assert result.exit_code == 3
    assert result.stderr == f'error: resourceclaim "nope" not found in any namespace (snapshot {snap})\n'
    in_ns = dra("explain", "claim", "shared", "-n", "ml", "--snapshot", snap)
    assert in_ns.stderr == f'error: resourceclaim "shared" not found in namespace ml (snapshot {snap})\n'
