"""`kubectl dra snapshot -o DIR` as a user runs it twice: it never mixes two runs' files, never
replaces a directory it did not write, and records what it could not read so that reading the
snapshot back says "could not be read" rather than "none"."""

from __future__ import annotations

from pathlib import Path

import yaml
from builders import claim, pod, resource_slice

from kubectl_dra.kube.snapshot import MARKER

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster"
GPU = "gpu.example.com"


def take(dra, out: Path, *extra: str):
    return dra("snapshot", "-A", "--snapshot", str(EXAMPLE), "-o", str(out), *extra)


def test_a_new_directory_gets_one_file_per_kind_and_the_marker(dra, tmp_path):
    out = tmp_path / "bundle"
    result = take(dra, out)
    assert result.exit_code == 0, result
    about = yaml.safe_load((out / MARKER).read_text())
    assert about["source"] == f"snapshot {EXAMPLE}" and about["namespace"] is None
    assert about["kinds"]["Pod"] == len(yaml.safe_load((out / "pods.yaml").read_text())["items"]) > 0
    assert about["notRead"] == {}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no staging directory left behind"
    again = dra("claims", "-A", "--snapshot", str(out), "-o", "name")
    assert again.exit_code == 0 and again.stdout == dra("claims", "-A", "--snapshot", str(EXAMPLE), "-o", "name").stdout


def test_a_non_empty_directory_is_refused_without_overwrite(dra, tmp_path):
    out = tmp_path / "bundle"
    assert take(dra, out).exit_code == 0
    before = sorted(p.name for p in out.iterdir())
    result = take(dra, out)
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == f"error: {out} is not empty: pass --overwrite to replace the snapshot in it, " \
                            "or choose a new directory\n"
    assert sorted(p.name for p in out.iterdir()) == before


def test_overwrite_replaces_the_whole_earlier_snapshot(dra, tmp_path):
    out = tmp_path / "bundle"
    assert take(dra, out).exit_code == 0
    (out / "nodeoverlays.karpenter.sh.yaml").write_text("a file an earlier run wrote and this one would not\n")
    (out / "notes.txt").write_text("anything\n")
    result = take(dra, out, "--overwrite")
    assert result.exit_code == 0, result
    names = {p.name for p in out.iterdir()}
    assert "notes.txt" not in names
    assert yaml.safe_load((out / "nodeoverlays.karpenter.sh.yaml").read_text())["kind"] == "List"
    assert names == {MARKER} | {line.split()[2].rsplit("/", 1)[-1] for line in result.stdout.splitlines()[1:]}


def test_overwrite_never_replaces_a_directory_it_did_not_write(dra, tmp_path):
    mine = tmp_path / "home"
    mine.mkdir()
    (mine / "thesis.tex").write_text("irreplaceable\n")
    result = take(dra, mine, "--overwrite")
    assert result.exit_code == 3
    assert "holds no snapshot" in result.stderr and "not replacing it, even with --overwrite" in result.stderr
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]


def test_a_file_in_the_way_is_a_clear_error(dra, tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    result = take(dra, target)
    assert result.exit_code == 2 and result.stdout == ""  # a usage error: the flag's value is wrong
    assert f"Invalid value for '-o' / '--output-dir': Directory '{target}' is a file." in result.stderr
    assert target.read_text() == "x"


def test_a_kind_not_read_when_taken_is_reported_when_read_back(make_apiserver, kubeconfig_for, dra, tmp_path):
    p = pod("trainer-0", claims={"g": "c"})
    server = make_apiserver([p, claim("c", devices=[(GPU, "worker-1", "gpu-0")]),
                             resource_slice("worker-1", GPU, ["gpu-0"])])
    server.fail(403, resource="pods")
    out = tmp_path / "bundle"
    taken = dra("snapshot", "-A", "-o", str(out), "--kubeconfig", str(kubeconfig_for(server)))
    assert taken.exit_code == 4, taken
    about = yaml.safe_load((out / MARKER).read_text())
    assert "Pod" not in about["kinds"] and "cannot list pods" in about["notRead"]["Pod"]
    assert not (out / "pods.yaml").exists()
    plain = dra("claims", "-A", "--snapshot", str(out))
    assert plain.exit_code == 0 and plain.stderr == "", "the plain table needs no pods"
    back = dra("claims", "-A", "-o", "wide", "--snapshot", str(out))
    assert back.exit_code == 4, "the claim is shown, but without pods the reservations cannot be judged"
    assert back.stdout.split()[:2] == ["NAMESPACE", "NAME"] and "c" in back.stdout.split()
    assert f"snapshot {out} holds no Pod objects: they could not be read when it was taken (cannot list pods" \
        in back.stderr


def test_a_namespace_snapshot_says_so_when_read_for_every_namespace(dra, tmp_path):
    out = tmp_path / "bundle"
    assert dra("snapshot", "-n", "ml", "--snapshot", str(EXAMPLE), "-o", str(out)).exit_code == 0
    same = dra("claims", "-n", "ml", "--snapshot", str(out))
    assert same.exit_code == 0 and same.stderr == ""
    wider = dra("claims", "-A", "--snapshot", str(out))
    assert wider.exit_code == 0
    assert wider.stderr == f"warning: snapshot {out} holds namespace ml only (it was taken with -n ml)\n"


def test_a_single_malformed_snapshot_file_is_an_error(dra, tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_text("items: [unclosed\n")
    result = dra("claims", "-A", "--snapshot", str(bad))
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.startswith(f"error: {bad}: invalid YAML at line 2")


def test_one_malformed_file_in_a_directory_is_partial(dra, tmp_path):
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(claim("c", devices=[(GPU, "worker-1", "gpu-0")])))
    (tmp_path / "broken.yaml").write_text("items: [unclosed\n")
    result = dra("claims", "-A", "--snapshot", str(tmp_path), "-o", "name")
    assert result.exit_code == 4
    assert result.stdout == "resourceclaim.resource.k8s.io/c\n"
    assert "broken.yaml: invalid YAML" in result.stderr
