"""Snapshot files (docs/contracts.md §5.1): every file form, bad files reported precisely, the rest still read."""

from __future__ import annotations

import json

import yaml
from builders import claim, pod

from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.snapshot import SnapshotSource, load_snapshot
from kubectl_dra.model.pod import Pod
from kubectl_dra.model.claim import ResourceClaim


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_single_object_list_and_multi_document_files(tmp_path):
    write(tmp_path / "one.yaml", yaml.safe_dump(pod("a")))
    write(tmp_path / "sub" / "list.yml", yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                         "items": [pod("b"), claim("c1")]}))
    write(tmp_path / "multi.yaml", yaml.safe_dump(pod("d")) + "---\n" + yaml.safe_dump(claim("c2")) + "---\n")
    write(tmp_path / "api.json", json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [pod("e")]}))
    write(tmp_path / "notes.txt", "not a snapshot file")
    inventory = load_snapshot(tmp_path)
    assert inventory.problems == []
    assert sorted(p.name for p in inventory.all(Pod)) == ["a", "b", "d", "e"]
    assert sorted(c.name for c in inventory.all(ResourceClaim)) == ["c1", "c2"]


def test_malformed_files_are_reported_with_position_and_the_rest_loads(tmp_path):
    write(tmp_path / "good.yaml", yaml.safe_dump(pod("ok")))
    write(tmp_path / "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n")
    write(tmp_path / "bad.json", '{"apiVersion": "v1", "kind": ')
    inventory = load_snapshot(tmp_path)
    assert [p.name for p in inventory.all(Pod)] == ["ok"]
    messages = sorted(p.message for p in inventory.problems)
    assert messages[0].startswith(f"{tmp_path / 'bad.json'}: invalid JSON at line 1, column 30: Expecting value")
    assert messages[1].startswith(f"{tmp_path / 'bad.yaml'}: invalid YAML at line 5, column 1")


def test_invalid_objects_unknown_versions_and_unknown_kinds(tmp_path):
    bad_quantity = pod("q")
    bad_quantity["spec"]["containers"][0]["resources"]["limits"] = {"memory": "lots"}
    future = claim("future")
    future["apiVersion"] = "resource.k8s.io/v2"
    write(tmp_path / "objs.yaml", yaml.safe_dump_all([
        bad_quantity, future, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}},
        pod("fine"), "just a string"]))
    inventory = load_snapshot(tmp_path)
    assert [p.name for p in inventory.all(Pod)] == ["q", "fine"]  # one bad field is not a missing pod
    assert [f.path for f in inventory.get(Pod, "ml", "q").invalid_fields] == ["spec.containers[0].resources.limits.memory"]
    messages = [p.message for p in inventory.problems]
    assert len(messages) == 3
    assert 'Pod ml/q: spec.containers[0].resources.limits.memory: invalid quantity "lots"' in messages[0]
    assert "the object is kept" in messages[0] and inventory.problems[0].severity == "error"
    assert "ResourceClaim ml/future: unknown API version resource.k8s.io/v2" in messages[1]
    assert "expected an object, found str" in messages[2]


def test_missing_path_is_an_input_error(tmp_path, dra):
    result = dra("claims", "--snapshot", str(tmp_path / "nowhere"))
    assert result.exit_code == 3
    assert result.stderr.strip() == f"error: snapshot {tmp_path / 'nowhere'}: no such file or directory"


def test_source_filters_like_a_server(tmp_path):
    write(tmp_path / "c.yaml", yaml.safe_dump_all([
        claim("a", "ml", labels={"team": "x"}), claim("b", "ml"), claim("c", "other", labels={"team": "x"})]))
    source = SnapshotSource(tmp_path)
    names = lambda inv: sorted(c.key for c in inv.all(ResourceClaim))  # noqa: E731
    assert names(source.read([ReadRequest(ResourceClaim, "ml")])) == ["ml/a", "ml/b"]
    assert names(source.read([ReadRequest(ResourceClaim, None, label_selector="team=x")])) == ["ml/a", "other/c"]
    assert names(source.read([ReadRequest(ResourceClaim, None, field_selector="metadata.name=b")])) == ["ml/b"]


def test_partial_snapshot_still_prints_and_exits_4(tmp_path, dra):
    write(tmp_path / "good.yaml", yaml.safe_dump(claim("kept")))
    write(tmp_path / "bad.yaml", ": : :\n  - [")
    result = dra("claims", "--snapshot", str(tmp_path), "--no-headers")
    assert result.exit_code == 4
    assert result.stdout.split()[1] == "kept"
    assert result.stderr.startswith(f"error: {tmp_path / 'bad.yaml'}: invalid YAML")
