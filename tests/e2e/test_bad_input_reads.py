"""Reading what a user hands over (issue 23, items 4-6, 9, 10, 12, 13, 16): a FIFO, a device, a
socket or a symlink loop where a file should be, standard input and pipes, files too large,
snapshot files that are no objects, a corrupt marker, a file that cannot be read where a NAME is
looked up, a directory that cannot be written. Each is one clear line and a documented exit code,
never a hang, a traceback or a verdict drawn from what could not be read.

Whatever could hang or eat memory on a wrong implementation runs in a child process with a time
and memory limit, so a regression fails the test instead of taking the machine with it."""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from builders import claim, pod, reserved_pod

from kubectl_dra.kube.snapshot import MARKER

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
RULE = ROOT / "examples" / "taint-rules" / "drain-worker-gpu-2.yaml"
CATALOG = EXAMPLE / "karpenter" / "instance-types.yaml"


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: /dev/zero read whole fails fast


def run(*args: str, stdin=None, input: bytes | None = None, timeout: float = 60, env: dict | None = None,
        pass_fds=(), program: str = "kubectl_dra.cli:main") -> subprocess.CompletedProcess:
    """The real program in a child process (its own stdin, a memory limit, a timeout)."""
    module, func = program.split(":")
    code = f"import sys; sys.argv[0] = 'kubectl-dra'; from {module} import {func}; {func}()"
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(env or {})}
    environ.pop("KUBECONFIG", None)
    environ.pop("KUBECTL_DRA_SNAPSHOT", None)
    return subprocess.run([sys.executable, "-c", code, *args], input=input, stdin=stdin, capture_output=True,
                          timeout=timeout, env=environ, cwd=ROOT, pass_fds=pass_fds, preexec_fn=_limits)


def one_error(stderr: str | bytes) -> str:
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in text, text
    return lines[0]


@pytest.fixture
def snapshot_dir(tmp_path):
    """A copy of the example snapshot to plant odd files in."""
    target = tmp_path / "snap"
    shutil.copytree(EXAMPLE, target)
    return target


# --------------------------------------------------------------------------- what a path can be

def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _socket(path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))  # left bound: nothing ever answers it


@pytest.mark.parametrize("plant,said", [
    (_fifo, "is a FIFO (named pipe), not a file"),
    (_zero, "is a character device, not a file"),
    (_socket, "is a socket, not a file"),
])
def test_a_non_file_in_a_snapshot_directory_is_named_and_the_rest_loads(snapshot_dir, plant, said):
    """Item 4/5: `claims -A` used to hang on the FIFO and read /dev/zero until memory ran out."""
    plant(snapshot_dir / "odd.yaml")
    result = run("claims", "-A", "--snapshot", str(snapshot_dir), "-o", "name", timeout=30)
    assert result.returncode == 4, result
    assert result.stderr.decode() == (f"error: {snapshot_dir / 'odd.yaml'}: {said} "
                                      "(only regular files are read from a directory)\n")
    assert len(result.stdout.splitlines()) == 12  # every claim of the example, nothing lost


@pytest.mark.parametrize("args,named", [
    (["claims", "--snapshot", "/dev/zero"], "/dev/zero: is a character device, not a file"),
    (["overlays", "--snapshot", str(EXAMPLE), "--catalog", "/dev/zero"], "/dev/zero: is a character device, not a file"),
    (["taints", "--dry-run", "--snapshot", str(EXAMPLE), "-f", "/dev/zero"], "/dev/zero: is a character device, not a file"),
    (["claims", "--kubeconfig", "/dev/zero"], "cannot read kubeconfig /dev/zero: is a character device, not a file"),
    (["claims", "--server", "https://127.0.0.1:1", "--certificate-authority", "/dev/zero"],
     "cannot read certificate-authority /dev/zero: is a character device, not a file"),
])
def test_a_device_named_as_a_file_is_refused_before_it_is_read(args, named):
    """Item 5: --catalog /dev/zero and taints -f /dev/zero reached 5 GB in 8 s."""
    result = run(*args, timeout=30)
    assert result.returncode == 3, result
    assert one_error(result.stderr).endswith(named)


def test_a_token_file_that_is_a_device_is_refused(tmp_path):
    config = tmp_path / "config"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"tokenFile": "/dev/zero"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    result = run("claims", "--kubeconfig", str(config), timeout=30)
    assert result.returncode == 3, result
    assert one_error(result.stderr).endswith('cannot read tokenFile /dev/zero of user "u": '
                                             "is a character device, not a file")


def test_every_read_is_bounded_by_the_documented_limit(tmp_path, snapshot_dir):
    """A regular file over the limit is refused unread; a pipe is cut at the limit."""
    big = tmp_path / "big.yaml"
    big.write_text(yaml.safe_dump(claim("c")) + "#" * 5000 + "\n")
    small = {"KUBECTL_DRA_MAX_FILE_BYTES": "4096"}
    alone = run("claims", "-A", "--snapshot", str(big), env=small)
    assert alone.returncode == 3
    assert one_error(alone.stderr) == (f"error: {big}: is {big.stat().st_size} bytes, more than the limit of "
                                       "4096 bytes (set KUBECTL_DRA_MAX_FILE_BYTES to read it)")
    largest = max(f.stat().st_size for f in snapshot_dir.rglob("*.yaml"))
    (snapshot_dir / "big.yaml").write_text(yaml.safe_dump(claim("c")) + "#" * largest + "\n")
    inside = run("claims", "-A", "--snapshot", str(snapshot_dir), "-o", "name",
                 env={"KUBECTL_DRA_MAX_FILE_BYTES": str(largest)})
    assert inside.returncode == 4 and len(inside.stdout.splitlines()) == 12  # the rest loads, c is not in it
    assert inside.stderr.decode().startswith(f"error: {snapshot_dir / 'big.yaml'}: is ")
    piped = run("claims", "-A", "--snapshot", "-", input=big.read_bytes(), env=small)
    assert piped.returncode == 3
    assert one_error(piped.stderr) == ("error: standard input: more than the limit of 4096 bytes "
                                       "(set KUBECTL_DRA_MAX_FILE_BYTES to read more)")


# --------------------------------------------------------------------------- stdin and pipes

def _claims_yaml() -> bytes:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [claim("a"), claim("b", "other")]}).encode()


def test_snapshot_from_standard_input():
    """Item 6: kubectl get ... -o yaml | kubectl dra claims --snapshot -"""
    result = run("claims", "-A", "--snapshot", "-", "-o", "name", input=_claims_yaml())
    assert result.returncode == 0, result
    assert result.stdout.decode() == "resourceclaim.resource.k8s.io/a\nresourceclaim.resource.k8s.io/b\n"
    as_json = run("claims", "-A", "--snapshot", "-", "-o", "name",
                  input=b'{"apiVersion": "v1", "kind": "List", "items": [' + json.dumps(claim("j")).encode() + b"]}")
    assert as_json.returncode == 0 and as_json.stdout.decode() == "resourceclaim.resource.k8s.io/j\n", as_json
    empty_list = run("claims", "-A", "--snapshot", "-", input=b"apiVersion: v1\nkind: List\nitems: []\n")
    assert empty_list.returncode == 0 and empty_list.stderr.decode() == "No resources found in any namespace.\n"
    nothing = run("claims", "-A", "--snapshot", "-", input=b"")
    assert nothing.returncode == 3 and one_error(nothing.stderr) == "error: standard input: no objects in it"


def test_taint_rule_and_catalog_from_standard_input():
    rule = run("taints", "--dry-run", "--snapshot", str(EXAMPLE), "-f", "-", "-o", "json", input=RULE.read_bytes())
    by_file = run("taints", "--dry-run", "--snapshot", str(EXAMPLE), "-f", str(RULE), "-o", "json")
    assert rule.returncode == by_file.returncode == 1

    def outcomes(result):  # the same rule and verdicts (times in the document follow the clock)
        doc = json.loads(result.stdout)
        return doc["rule"], [(d["device"], [c["outcome"] for c in d["consumers"]]) for d in doc["devices"]]

    assert outcomes(rule) == outcomes(by_file) and outcomes(rule)[1]
    catalog = run("overlays", "--snapshot", str(EXAMPLE), "--catalog", "-", "-o", "json", input=CATALOG.read_bytes())
    assert catalog.returncode == 0 and b"OverlayExplanation" in catalog.stdout, catalog
    both = run("taints", "--dry-run", "--snapshot", "-", "-f", "-", input=RULE.read_bytes())
    assert both.returncode == 2 and b"both read standard input" in both.stderr


def test_a_pipe_named_explicitly_is_read():
    """Item 6: <(...) is /dev/fd/N, a pipe: it used to be taken for an empty directory."""
    read_end, write_end = os.pipe()

    def feed():
        with os.fdopen(write_end, "wb") as out:
            out.write(_claims_yaml())

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        result = run("claims", "-A", "--snapshot", f"/dev/fd/{read_end}", "-o", "name", pass_fds=(read_end,))
    finally:
        writer.join()
        os.close(read_end)
    assert result.returncode == 0, result
    assert result.stdout.decode() == "resourceclaim.resource.k8s.io/a\nresourceclaim.resource.k8s.io/b\n"


def test_a_terminal_is_not_waited_on():
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        result = run("claims", "--snapshot", "-", stdin=follower, timeout=30)
    finally:
        os.close(leader)
        os.close(follower)
    assert result.returncode == 3
    assert "standard input is a terminal" in one_error(result.stderr)


# --------------------------------------------------------------------------- paths that are wrong

def test_a_symlink_loop_is_called_one(tmp_path, dra):
    """Item 12: it was reported as "no such file"."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    result = dra("claims", "--snapshot", str(loop))
    assert result.exit_code == 3
    assert one_error(result.stderr) == f"error: snapshot {loop}: too many levels of symbolic links (a symlink loop)"
    missing = dra("claims", "--snapshot", str(tmp_path / "nowhere"))
    assert one_error(missing.stderr) == f"error: snapshot {tmp_path / 'nowhere'}: no such file or directory"


@pytest.mark.parametrize("content,said", [
    ("42\n", "expected an object, found int"),
    ("- a\n- b\n", "expected an object, found list"),
    ("metadata: {name: x}\n", "object without apiVersion and kind"),
    ("apiVersion: v1\nkind: List\nitems: {a: 1}\n", "List: items must be a list of objects, found dict (its content is not read)"),
    ("# nothing\n", "no objects in it"),
])
def test_a_single_snapshot_file_without_an_object_is_an_error(tmp_path, dra, snapshot_dir, content, said):
    """Item 10: exit 4 with nothing printed; it is exit 3 naming the file (item 13: the List's
    items were dropped silently). In a directory the same file is one named problem."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    alone = dra("claims", "-A", "--snapshot", str(bad))
    assert (alone.exit_code, alone.stdout) == (3, "")
    assert one_error(alone.stderr) == f"error: {bad}: {said}"
    if said == "no objects in it":
        return  # an empty file in a directory is no problem
    shutil.copy(bad, snapshot_dir / "bad.yaml")
    inside = dra("claims", "-A", "--snapshot", str(snapshot_dir), "-o", "name")
    assert inside.exit_code == 4 and len(inside.stdout.splitlines()) == 12
    assert inside.stderr == f"error: {snapshot_dir / 'bad.yaml'}: {said}\n"


@pytest.mark.parametrize("marker,said", [
    ("kinds: [unclosed\n", "invalid YAML"),
    ("just a string\n", "not a snapshot marker (it needs a kinds: mapping)"),
    ("createdBy: someone\n", "not a snapshot marker (it needs a kinds: mapping)"),
])
def test_a_corrupt_snapshot_marker_is_a_named_problem(tmp_path, dra, marker, said):
    """Item 13: a corrupt marker made the snapshot a hand-made one without a word."""
    out = tmp_path / "bundle"
    assert dra("snapshot", "-A", "--snapshot", str(EXAMPLE), "-o", str(out)).exit_code == 0
    (out / MARKER).write_text(marker)
    result = dra("claims", "-A", "--snapshot", str(out), "-o", "name")
    assert result.exit_code == 4 and len(result.stdout.splitlines()) == 12
    line = one_error(result.stderr)
    assert line.startswith(f"error: {out / MARKER}: ") and said in line
    assert line.endswith("which kinds the snapshot holds is unknown, so a kind missing from it may not have "
                         "been read when it was taken")


def _break(path: Path, how: str) -> None:
    path.unlink()
    if how == "yaml":
        path.write_text("apiVersion: v1\nkind: List\nitems: [\n")
    else:
        path.symlink_to(path)


@pytest.mark.parametrize("how", ["yaml", "loop"])
def test_a_name_in_a_file_that_could_not_be_read_is_not_called_not_found(snapshot_dir, dra, how):
    """Item 12: an unreadable nodes.yaml made `node "worker-gpu-1" not found`. A file that held
    Nodes (by its name or its text) makes the kind unread; one that could hold anything makes a
    lookup by name say it cannot tell."""
    _break(snapshot_dir / "nodes.yaml", how)
    result = dra("explain", "node", "worker-gpu-1", "--snapshot", str(snapshot_dir))
    assert result.exit_code == 3 and result.stdout == ""
    assert "not found" not in result.stderr
    assert result.stderr.splitlines()[-1] == "error: nothing to show: Node objects could not be read (see above)"
    assert str(snapshot_dir / "nodes.yaml") in result.stderr.splitlines()[0]
    verify = dra("verify", "--node", "worker-gpu-1", "--snapshot", str(snapshot_dir))
    assert "not found" not in verify.stderr and str(snapshot_dir / "nodes.yaml") in verify.stderr
    assert verify.exit_code in (1, 4)  # the report is shown; never "not found" (3)

    (snapshot_dir / "nodes.yaml").unlink()
    shutil.copy(EXAMPLE / "nodes.yaml", snapshot_dir / "nodes.yaml")
    _break(snapshot_dir / "workloads" / "eval.yaml", how)  # named for no kind: it could have held a Node
    (snapshot_dir / "workloads" / "eval.yaml").unlink()
    (snapshot_dir / "workloads" / "eval.yaml").write_text("items: [unclosed\n")
    unsure = dra("explain", "node", "worker-gpu-9", "--snapshot", str(snapshot_dir))
    assert unsure.exit_code == 3 and "not found" not in unsure.stderr
    assert (f'error: cannot tell whether Node "worker-gpu-9" exists in snapshot {snapshot_dir}: '
            f"{snapshot_dir / 'workloads' / 'eval.yaml'} could not be read (see above)") in unsure.stderr.splitlines()
    found = dra("explain", "node", "worker-gpu-1", "--snapshot", str(snapshot_dir))  # it is there: shown
    assert found.exit_code == 4 and found.stdout.startswith("Node worker-gpu-1")
    absent = dra("explain", "node", "worker-gpu-9", "--snapshot", str(EXAMPLE))  # read, and not there
    assert one_error(absent.stderr) == f'error: node "worker-gpu-9" not found (snapshot {EXAMPLE})'


def test_a_kind_in_a_file_that_could_not_be_read_draws_no_verdict_from_absence(tmp_path, dra):
    """The pods file of a snapshot is broken: its pods are unknown, not gone, so no reservation
    of theirs is called stale."""
    holder = pod("holder", claims={"gpu": "held"})
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump(
        claim("held", devices=[("gpu.example.com", "worker-1", "gpu-0")], reserved_for=[reserved_pod(holder)])))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(holder))
    whole = dra("claims", "-A", "-o", "json", "--snapshot", str(tmp_path))
    assert whole.exit_code == 0 and "StaleReservation" not in whole.json()["items"][0]["findings"]
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(holder)[:-40] + "\n  - [unclosed\n")
    broken = dra("claims", "-A", "-o", "json", "--snapshot", str(tmp_path))
    assert broken.exit_code == 4 and broken.stderr.startswith(f"error: {tmp_path / 'pods.yaml'}: invalid YAML")
    assert "StaleReservation" not in broken.json()["items"][0]["findings"]


# --------------------------------------------------------------------------- snapshot -o

@pytest.mark.parametrize("target", ["file/x", "/proc/kubectl-dra-test/x", "loop/x"])
def test_snapshot_to_a_place_that_cannot_be_written_says_so_before_reading(tmp_path, dra, target):
    """Item 9: a clear error and exit 3, before a cluster is read (the server here does not exist)."""
    (tmp_path / "file").write_text("a file, not a directory\n")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    out = target if target.startswith("/") else str(tmp_path / target)
    result = dra("snapshot", "--server", "http://127.0.0.1:1", "-o", out)
    assert result.exit_code == 3
    line = one_error(result.stderr)
    assert line.startswith(f"error: cannot write snapshot to {out}: ") and "API server" not in line


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to drop to nobody")
def test_snapshot_without_permission_is_a_clear_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    tmp_path.chmod(0o755)
    code = ("import sys; sys.argv[0] = 'kubectl-dra'; from kubectl_dra.cli import main; main()")
    for out in (locked / "x", locked):
        result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                                 code, "snapshot", "--snapshot", str(EXAMPLE), "-o", str(out)],
                                capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                cwd="/", timeout=60)
        assert result.returncode == 3, result
        assert one_error(result.stderr).startswith(f"error: cannot write snapshot to {out}: permission denied")


def test_snapshot_keeps_the_instance_type_catalog(tmp_path, dra):
    """Item 16: read back, the prices are those of the original (they came from its catalog)."""
    out = tmp_path / "bundle"
    taken = dra("snapshot", "-A", "--snapshot", str(EXAMPLE), "-o", str(out))
    assert taken.exit_code == 0 and "InstanceTypeCatalog" in taken.stdout
    original = dra("overlays", "--snapshot", str(EXAMPLE), "-o", "json")
    back = dra("overlays", "--snapshot", str(out), "-o", "json")
    assert back.exit_code == original.exit_code and back.json()["instanceTypes"] == original.json()["instanceTypes"]
    assert yaml.safe_load((out / MARKER).read_text())["kinds"]["InstanceTypeCatalog"] == 1


# --------------------------------------------------------------------------- flags

def test_a_bad_selector_is_a_usage_error(dra):
    for args in (["claims"], ["verify"]):
        result = dra(*args, "--snapshot", str(EXAMPLE), "-l", "app in (a")
        assert result.exit_code == 2, result
        assert "Invalid value for '-l' / '--selector': invalid label selector \"app in (a\"" in result.stderr


def test_connection_flags_before_the_explain_subcommand(dra):
    """Item 16: `explain --snapshot ... claim` was "No such option"; a later flag wins."""
    after = dra("explain", "claim", "shared-gpu", "-n", "ml", "--snapshot", str(EXAMPLE))
    before = dra("explain", "--snapshot", str(EXAMPLE), "-n", "ml", "claim", "shared-gpu")
    assert before.exit_code == after.exit_code == 0 and before.stdout == after.stdout
    inner = dra("-n", "default", "explain", "-n", "ml", "--snapshot", str(EXAMPLE), "pod", "embedder")
    assert inner.exit_code == 0 and inner.stdout.startswith("Pod ml/embedder")


@pytest.mark.parametrize("args,first_line", [
    (["explain", "pod", "embedder"], "Pod ml/embedder"),
    (["explain", "claim", "shared-gpu"], "ResourceClaim ml/shared-gpu"),
    (["explain", "claim", "--pod", "embedder"], "ResourceClaim ml/embedder-gpu-qfx82"),
])
def test_with_a_snapshot_a_name_is_found_in_any_namespace(dra, args, first_line):
    """Item 16: "with --snapshot the default is every namespace", as completion offers the names."""
    result = dra(*args, "--snapshot", str(EXAMPLE))
    assert result.exit_code == 0, result
    assert result.stdout.startswith(first_line)


def test_verify_a_pod_of_a_snapshot_in_any_namespace(dra):
    result = dra("verify", "embedder", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 1 and "embedder" in result.stdout and "not found" not in result.stderr, result


def test_a_name_in_two_namespaces_of_a_snapshot_must_be_chosen(tmp_path, dra):
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([pod("twin", "a"), pod("twin", "b")]))
    for args in (["explain", "pod", "twin"], ["verify", "twin"]):
        result = dra(*args, "--snapshot", str(tmp_path))
        assert result.exit_code == 3, result
        assert one_error(result.stderr) == 'error: pod "twin" exists in namespaces a, b: choose one with -n'
    chosen = dra("explain", "pod", "twin", "-n", "b", "--snapshot", str(tmp_path))
    assert chosen.exit_code in (0, 4) and chosen.stdout.startswith("Pod b/twin")


# --------------------------------------------------------------------------- completion

def test_completion_skips_a_fifo_in_the_snapshot_directory(snapshot_dir):
    os.mkfifo(snapshot_dir / "fifo.yaml")
    started = time.monotonic()
    result = run("__complete", "explain", "pod", "--snapshot", str(snapshot_dir), "-n", "ml", "e",
                 program="kubectl_dra.cli.completion:main", timeout=30)
    assert result.stdout.decode().splitlines() == ["embedder", ":4"]
    assert time.monotonic() - started < 5


def test_completion_answers_within_five_seconds_whatever_it_reads(tmp_path):
    """A FIFO named as --snapshot waits for a writer that never comes; with --snapshot - the
    standard input is the shell's, never read."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for snapshot in (str(fifo), "-"):
        read_end, write_end = os.pipe()  # a stdin that never ends
        started = time.monotonic()
        try:
            result = run("__complete", "explain", "pod", "--snapshot", snapshot, "", stdin=read_end,
                         program="kubectl_dra.cli.completion:main", timeout=30)
        finally:
            os.close(read_end)
            os.close(write_end)
        assert result.stdout.decode().splitlines() == [":4"] and result.returncode == 0
        assert time.monotonic() - started < 5.5  # 5 s promised, plus starting Python on a busy machine


# --------------------------------------------------------------------------- live

def test_a_server_error_after_retries_names_status_and_url(apiserver, kubeconfig_for, dra):
    """Item 12: only the server's text was shown."""
    apiserver.fail(500, resource="resourceclaims")
    result = dra("claims", "--kubeconfig", str(kubeconfig_for(apiserver)), "-A", "--request-timeout", "20s")
    assert result.exit_code == 3
    line = one_error(result.stderr)
    assert "(HTTP 500 " in line and f"from GET {apiserver.url}/apis/resource.k8s.io/v1/resourceclaims" in line
    assert line.endswith("after 4 retries)")


# --------------------------------------------------------------------------- node sources

def test_an_absent_node_source_is_said_on_stderr(tmp_path):
    """README (Node-side DRA state): "a source that is absent ... is said on stderr"."""
    node = ROOT / "examples" / "nodes" / "worker-gpu-1"
    result = run("scan", "--once", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1",
                 "--cgroup-root", str(node / "sys" / "fs" / "cgroup"), "--kubelet-root", str(tmp_path / "none"),
                 "--cdi-dir", str(tmp_path / "cdi"), program="node_agent.__main__:main")
    stderr = result.stderr.decode()
    assert f"warning: {tmp_path / 'none' / 'dra_manager_state'}: not there" in stderr
    assert f"warning: {tmp_path / 'none' / 'pod-resources' / 'kubelet.sock'}: no socket there" in stderr
    assert str(tmp_path / "cdi") in stderr
