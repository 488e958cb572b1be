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
    """A file the earlier snapshot listed and this one does not write is gone: the two never mix."""
    out = tmp_path / "bundle"
    assert take(dra, out).exit_code == 0
    about = yaml.safe_load((out / MARKER).read_text())
    (out / "resourceclaimparameters.resource.k8s.io.yaml").write_text("a file an earlier run wrote and this one would not\n")
    about["files"].append("resourceclaimparameters.resource.k8s.io.yaml")
    (out / MARKER).write_text(yaml.safe_dump(about))
    result = take(dra, out, "--overwrite")
    assert result.exit_code == 0, result
    names = {p.name for p in out.iterdir()}
    assert "resourceclaimparameters.resource.k8s.io.yaml" not in names
    assert names == {MARKER} | {line.split()[2].rsplit("/", 1)[-1] for line in result.stdout.splitlines()[1:]}
    assert names == {MARKER, *yaml.safe_load((out / MARKER).read_text())["files"]}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "nothing left beside it"


def test_overwrite_reads_an_earlier_marker_without_its_file_list(dra, tmp_path):
    """0.2.0's markers name their kinds, not their files: the files are the ones those kinds get."""
    out = tmp_path / "bundle"
    assert take(dra, out).exit_code == 0
    about = yaml.safe_load((out / MARKER).read_text())
    del about["files"]
    (out / MARKER).write_text(yaml.safe_dump(about))
    assert take(dra, out, "--overwrite").exit_code == 0


def test_overwrite_keeps_a_snapshot_the_user_added_files_to(dra, tmp_path):
    """Issue 37 item 6: notes.txt and keep/data were deleted without a word, exit 0."""
    out = tmp_path / "bundle"
    assert take(dra, out).exit_code == 0
    (out / "notes.txt").write_text("my notes\n")
    (out / "keep").mkdir()
    (out / "keep" / "data").write_text("mine\n")
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    result = take(dra, out, "--overwrite")
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == (f"error: {out} holds files that are not part of its snapshot: keep/, notes.txt: not "
                             "replacing it, even with --overwrite (only a directory that is exactly an earlier "
                             "snapshot is replaced); move them, or choose a new directory\n")
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    assert (out / "notes.txt").read_text() == "my notes\n" and (out / "keep" / "data").read_text() == "mine\n"


def test_overwrite_never_replaces_a_directory_it_did_not_write(dra, tmp_path):
    mine = tmp_path / "home"
    mine.mkdir()
    (mine / "thesis.tex").write_text("irreplaceable\n")
    result = take(dra, mine, "--overwrite")
    assert result.exit_code == 3
    assert "holds no snapshot" in result.stderr and "not replacing it, even with --overwrite" in result.stderr
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"]


def test_a_file_that_appears_while_the_cluster_is_read_is_kept(tmp_path):
    """Issue 37 item 7: DIR was checked before the read and everything in it removed after. Now it
    is checked again before the rename, and the run fails without touching it."""
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.snapshotdir import SnapshotTarget

    empty = tmp_path / "empty"
    empty.mkdir()
    with SnapshotTarget(empty, overwrite=False) as target:
        (empty / "arrived.txt").write_text("while reading\n")  # the read takes minutes on a live cluster
        try:
            target.write({}, {"source": "test"})
            raise AssertionError("the write went on")
        except InputError as exc:
            assert "it changed while the cluster was read" in str(exc)
    assert [p.name for p in empty.iterdir()] == ["arrived.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_second_writer_is_refused_while_the_first_runs(dra, tmp_path):
    """Issue 37 item 8: two runs into one DIR both exited 0 and DIR held one of them."""
    from kubectl_dra.kube.snapshotdir import SnapshotTarget

    out = tmp_path / "bundle"
    with SnapshotTarget(out, overwrite=False):  # the first run, still reading
        second = take(dra, out)
        assert second.exit_code == 3 and second.stdout == ""
        assert "another `kubectl dra snapshot` is writing it now" in second.stderr
    assert not out.exists()
    assert take(dra, out).exit_code == 0  # the lock went with the first run
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_symlink_to_a_snapshot_is_followed_and_stays_a_link(dra, tmp_path):
    """Issue 37 item 9: LINK became a plain directory, `.LINK.old-PID` stayed beside it and the
    target was never updated."""
    real = tmp_path / "real"
    assert take(dra, real).exit_code == 0
    link = tmp_path / "link"
    link.symlink_to(real)
    (real / MARKER).write_text((real / MARKER).read_text().replace("source:", "oldsource: x\nsource:"))
    result = take(dra, link, "--overwrite")
    assert result.exit_code == 0, result
    assert link.is_symlink() and link.resolve() == real
    assert "oldsource" not in (real / MARKER).read_text()  # the target itself was replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]
    assert str(link / "pods.yaml") in result.stdout


def test_a_file_in_the_way_is_an_input_error(dra, tmp_path):
    """Issue 37 item 10: click's path check said it, with exit 2; the README says 3."""
    target = tmp_path / "file"
    target.write_text("x")
    result = take(dra, target)
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == f"error: cannot write snapshot to {target}: it exists and is not a directory\n"
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
