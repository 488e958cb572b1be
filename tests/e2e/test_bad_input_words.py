"""Silent drops that changed a verdict, and messages that did not say what was wrong (issue 37,
items 11-14 and 16-23): each through the CLI as a user meets it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from builders import claim, pod, reserved_pod

from kubectl_dra.kube.snapshot import MARKER

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"


@pytest.fixture
def snap(tmp_path):
    target = tmp_path / "snap"
    shutil.copytree(EXAMPLE, target)
    return target


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# -- 11. duplicate objects -----------------------------------------------------------------------------

def test_the_same_claim_twice_names_both_files_and_which_was_used(snap, dra):
    """A claim showed as allocated or pending depending on which file sorted last; exit 0."""
    original = next(d for d in documents(snap / "workloads" / "embedder.yaml") if d["kind"] == "ResourceClaim")
    copy = {**original, "metadata": {**original["metadata"], "uid": "another-uid"}}
    copy.pop("status")  # the other copy says pending
    (snap / "aa-first.yaml").write_text(yaml.safe_dump(copy))  # sorts first
    result = dra("claims", "-n", "ml", "--snapshot", str(snap))
    assert result.exit_code == 4, result
    lines = [line for line in result.stderr.splitlines() if "embedder-gpu-qfx82" in line]
    assert len(lines) == 1 and str(snap / "aa-first.yaml") in lines[0] and \
        str(snap / "workloads" / "embedder.yaml") in lines[0] and "uids another-uid and" in lines[0], result.stderr
    used = "aa-first.yaml" if "using the one in " + str(snap / "aa-first.yaml") in lines[0] else "embedder.yaml"
    row = next(r for r in result.stdout.splitlines() if r.startswith("embedder-gpu-qfx82"))
    assert ("pending" in row) == (used == "aa-first.yaml")


def test_the_later_resource_version_wins_whatever_the_file_order(snap, dra):
    original = next(d for d in documents(snap / "workloads" / "embedder.yaml") if d["kind"] == "ResourceClaim")
    version = int(original["metadata"].get("resourceVersion") or 100)
    original["metadata"]["resourceVersion"] = str(version)
    (snap / "workloads" / "embedder.yaml").write_text(yaml.safe_dump_all(
        [original if d["kind"] == "ResourceClaim" else d for d in documents(snap / "workloads" / "embedder.yaml")]))
    newer = {**original, "metadata": {**original["metadata"], "resourceVersion": str(version + 1)}}
    newer.pop("status")
    (snap / "aa-first.yaml").write_text(yaml.safe_dump(newer))
    result = dra("claims", "-n", "ml", "--snapshot", str(snap))
    assert result.exit_code == 4 and "its resourceVersion is the later" in result.stderr
    assert f"using the one in {snap / 'aa-first.yaml'}" in result.stderr
    assert "pending" in next(r for r in result.stdout.splitlines() if r.startswith("embedder-gpu-qfx82"))


def test_the_very_same_object_twice_is_one_object(snap, dra):
    """Overlapping dumps of the same objects (same uid and resourceVersion) are not a conflict."""
    shutil.copy(snap / "workloads" / "embedder.yaml", snap / "again.yaml")
    result = dra("claims", "-n", "ml", "--snapshot", str(snap), "-o", "name")
    assert result.exit_code == 0 and result.stderr == ""


# -- 12. a kind in the wrong group -----------------------------------------------------------------------

def test_a_claim_under_apiversion_v1_is_named_not_ignored(tmp_path, dra):
    bad = claim("c", devices=())
    bad["apiVersion"] = "v1"
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = dra("claims", "-A", "--snapshot", str(path))
    assert result.exit_code == 3, result
    assert "ResourceClaim" in result.stderr and "unknown API version v1" in result.stderr


def test_a_crd_of_another_group_with_a_known_kind_name_stays_ignored(tmp_path, dra):
    """scheduler-plugins' PodGroup (scheduling.x-k8s.io) is another kind: not an error."""
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim("c", devices=())))
    (tmp_path / "podgroup.yaml").write_text(yaml.safe_dump({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "default"}}))
    result = dra("claims", "-A", "--snapshot", str(tmp_path), "-o", "name")
    assert result.exit_code == 0 and result.stderr == ""


# -- 13, 14. empty files and the marker's counts -------------------------------------------------------------

def test_an_empty_file_named_for_a_kind_is_a_problem_and_its_kind_is_not_read(tmp_path, dra):
    out = tmp_path / "out"
    assert dra("snapshot", "-A", "--snapshot", str(EXAMPLE), "-o", str(out)).exit_code == 0
    (out / "resourceclaims.resource.k8s.io.yaml").write_text("")
    result = dra("claims", "-A", "--snapshot", str(out))
    assert result.exit_code == 3 and result.stdout == ""
    assert f"{out / 'resourceclaims.resource.k8s.io.yaml'}: empty: it holds no objects" in result.stderr


@pytest.mark.parametrize("how", ["removed", "emptied of items"])
def test_a_kind_the_marker_counts_but_the_files_lack_is_not_read_never_not_found(tmp_path, dra, how):
    out = tmp_path / "out"
    assert dra("snapshot", "-A", "--snapshot", str(EXAMPLE), "-o", str(out)).exit_code == 0
    pods = out / "pods.yaml"
    if how == "removed":
        pods.unlink()
    else:
        pods.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}))
    result = dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", str(out))
    assert result.exit_code == 3
    assert "not found" not in result.stderr and "its marker counts" in result.stderr and "counts as not read" in \
        result.stderr, result.stderr


# -- 16. a list whose items are not a list ----------------------------------------------------------------

def test_a_node_list_with_no_items_list_cannot_tell_rather_than_not_found(snap, dra):
    (snap / "nodes.yaml").write_text("apiVersion: v1\nkind: NodeList\nitems: 42\n")
    result = dra("explain", "node", "worker-gpu-1", "--snapshot", str(snap))
    assert result.exit_code == 3 and "not found" not in result.stderr
    assert "items must be a list" in result.stderr and "could not be read" in result.stderr


# -- 17. a server URL that cannot be parsed ---------------------------------------------------------------

@pytest.mark.parametrize("server,said", [
    ("https://[::1", 'invalid server URL "https://[::1": invalid IPv6 URL'),
    ("https://127.0.0.1:99999", 'invalid server URL "https://127.0.0.1:99999": the port is out of range 0-65535'),
])
def test_a_bad_server_url_is_named(tmp_path, kubeconfig_for, dra, server, said):
    config = tmp_path / "config"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server}}], "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    result = dra("claims", "--kubeconfig", str(config))
    assert result.exit_code == 3 and result.stderr == f"error: {said}\n"


# -- 18. TYPE/NAME -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["explain", "pod", "pod/embedder", "-n", "ml"], ["explain", "pod", "po/embedder", "-n", "ml"],
    ["explain", "claim", "resourceclaim/embedder-gpu-qfx82", "-n", "ml"],
    ["explain", "claim", "resourceclaims.resource.k8s.io/embedder-gpu-qfx82", "-n", "ml"],
    ["explain", "node", "node/worker-gpu-1"], ["explain", "node", "no/worker-gpu-1"],
])
def test_type_slash_name_is_taken_where_the_type_is_the_one_explained(dra, args):
    plain = [a.split("/", 1)[1] if "/" in a else a for a in args]
    result, expected = dra(*args, "--snapshot", str(EXAMPLE)), dra(*plain, "--snapshot", str(EXAMPLE))
    assert result.exit_code == expected.exit_code == 0 and result.stdout == expected.stdout


def test_another_type_says_which_command_takes_it(dra):
    result = dra("explain", "pod", "node/worker-gpu-1", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 2
    assert '"node/worker-gpu-1" names a Node; this command explains a Pod: run kubectl dra explain node ' \
           "worker-gpu-1" in result.stderr


# -- 19. durations out of range ------------------------------------------------------------------------------

@pytest.mark.parametrize("value,said", [
    ("5000h", "out of range: the kubelet takes a CFS period from 1ms to 1s, inclusive"),
    ("0", "out of range: the kubelet takes a CFS period from 1ms to 1s, inclusive"),
    ("1.5ms", None), ("soon", "not a duration"),
])
def test_cfs_period_out_of_range_gives_the_range(dra, value, said):
    result = dra("explain", "pod", "embedder", "-n", "ml", "--snapshot", str(EXAMPLE), "--cpu-cfs-period", value)
    if said is None:
        assert result.exit_code == 0 and "cpu.max" in result.stdout
    else:
        assert result.exit_code == 2 and said in result.stderr, result.stderr


# -- 20. empty KUBECONFIG entries --------------------------------------------------------------------------

def test_kubeconfig_of_empty_entries_is_said_as_such(dra, tmp_path):
    result = dra("claims", env={"KUBECONFIG": ":::", "HOME": str(tmp_path)})
    assert result.exit_code == 3
    assert "KUBECONFIG is set but names no file" in result.stderr and "()" not in result.stderr


# -- 21. what exactly is missing -------------------------------------------------------------------------------

@pytest.mark.parametrize("doc,said", [
    ({"kind": "ResourceClaim", "metadata": {"name": "x"}}, "object without apiVersion (ResourceClaim x)"),
    ({"apiVersion": "v1", "metadata": {"name": "x"}}, "object without kind"),
    ({"metadata": {"name": "x"}}, "object without apiVersion and kind"),
])
def test_a_missing_apiversion_or_kind_is_named(tmp_path, dra, doc, said):
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = dra("claims", "-A", "--snapshot", str(path))
    assert result.exit_code == 3 and said in result.stderr, result.stderr


# -- 22. NO_COLOR set but empty ----------------------------------------------------------------------------------

def test_an_empty_no_color_does_not_turn_colour_off():
    from kubectl_dra.env import Environment

    assert Environment(stdout_isatty=True, environ={"NO_COLOR": ""}).use_color
    assert not Environment(stdout_isatty=True, environ={"NO_COLOR": "1"}).use_color
    assert Environment(stdout_isatty=True, environ={}).use_color


# -- 23. list cells are cut --------------------------------------------------------------------------------------

def test_a_claim_with_250_consumers_prints_a_short_row_and_json_keeps_them_all(tmp_path, dra):
    pods = [pod(f"p{i:03d}", claims={"g": "shared"}) for i in range(250)]
    shared = claim("shared", devices=[("gpu.example.com", "worker-1", "gpu-0")], node="worker-1",
                   reserved_for=[reserved_pod(p) for p in pods])
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all([shared, *pods]))
    wide = dra("claims", "-A", "-o", "wide", "--snapshot", str(tmp_path))
    row = next(r for r in wide.stdout.splitlines() if " shared " in f" {r} ")
    assert "+ 245 more..." in row and len(row) < 400, row
    full = dra("claims", "-A", "-o", "json", "--snapshot", str(tmp_path)).json()
    assert len(full["items"][0]["reservedFor"]) == 250
