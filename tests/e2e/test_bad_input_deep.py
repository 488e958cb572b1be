"""Deeply nested documents (issue 37, items 1 and 2): 100,000 nested arrays (about 200 KB) gave
"unexpected RecursionError (this is a bug)" in every reader, and a CDI spec of that shape made the
agent's scan fail on every run. Each reader now names the file (or the server) and says it is
nested too deeply: alone, exit 3; in a directory, one problem among the rest (exit 4); on a node,
that one file or source, while the scan goes on and its verdicts stand.

Each case runs the real program in a child process (test_bad_input_reads.run), where a
RecursionError behaves as it does for a user."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from test_bad_input_reads import CATALOG, EXAMPLE, ROOT, RULE, one_error, run

from kubectl_dra.decoding import MAX_DEPTH, TooDeep, check_depth, json_value, yaml_documents

DEEP = "[" * 100_000 + "]" * 100_000
SAID = f"nested more than {MAX_DEPTH} levels deep"
NODE = ROOT / "examples" / "nodes" / "worker-gpu-1"
AGENT = "node_agent.__main__:main"


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


# -- the bound itself -------------------------------------------------------------------------------

def test_the_bound_is_exact_and_iterative():
    assert json_value("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    for text in ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), DEEP):
        with pytest.raises(TooDeep):
            json_value(text)
    check_depth(nested(MAX_DEPTH))
    with pytest.raises(TooDeep):
        check_depth({"a": {"b": nested(MAX_DEPTH - 1)}})  # dicts and lists count alike
    with pytest.raises(json.JSONDecodeError):  # malformed stays malformed, with its position
        json_value("[1,")


def test_yaml_aliases_cost_their_objects_and_a_cycle_is_too_deep():
    """A billion-laughs document is 10 objects, walked once each; a self-reference never ends, so it
    is too deep."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi"))
    assert yaml_documents(bomb, loader)[0]["i"][0][0][0][0][0][0][0][0][0] == "x"
    with pytest.raises(TooDeep):
        yaml_documents("&a [*a]", loader)


# -- every file a user names --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["deep.json", "deep.yaml"])
def test_a_deep_snapshot_file_is_a_named_error(tmp_path, name):
    path = tmp_path / name
    path.write_text(DEEP)
    result = run("claims", "-A", "--snapshot", str(path), timeout=60)
    assert result.returncode == 3, result
    assert str(path) in one_error(result.stderr) and "nested" in one_error(result.stderr)


def test_a_deep_snapshot_on_standard_input_is_a_named_error():
    result = run("claims", "-A", "--snapshot", "-", input=DEEP.encode(), timeout=60)
    assert result.returncode == 3, result
    assert one_error(result.stderr) == f"error: standard input: {SAID}"


def test_a_deep_file_in_a_snapshot_directory_is_one_problem_and_the_rest_shows(tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(EXAMPLE, snap)
    (snap / "zz-deep.json").write_text(DEEP)
    result = run("claims", "-A", "--snapshot", str(snap), "-o", "name", timeout=60)
    assert result.returncode == 4, result
    assert result.stderr.decode() == f"error: {snap / 'zz-deep.json'}: {SAID}\n"
    assert len(result.stdout.splitlines()) == 12  # every claim of the example


def test_a_deep_snapshot_marker_is_a_named_problem(tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(EXAMPLE, snap)
    (snap / ".kubectl-dra-snapshot.yaml").write_text(DEEP)
    result = run("claims", "-A", "--snapshot", str(snap), "-o", "name", timeout=60)
    assert "Traceback" not in result.stderr.decode() and "this is a bug" not in result.stderr.decode()
    assert SAID in result.stderr.decode(), result


@pytest.mark.parametrize("args", [
    ["overlays", "--snapshot", str(EXAMPLE), "--catalog", "{deep}"],
    ["taints", "--dry-run", "--snapshot", str(EXAMPLE), "-f", "{deep}"],
    ["claims", "-A", "--kubeconfig", "{deep}"],
], ids=["catalog", "taint-rule", "kubeconfig"])
def test_a_deep_catalog_rule_or_kubeconfig_is_a_named_error(tmp_path, args):
    deep = tmp_path / "deep.yaml"
    deep.write_text(DEEP)
    result = run(*[a.format(deep=deep) for a in args], timeout=60)
    assert result.returncode == 3, result
    line = one_error(result.stderr)
    assert str(deep) in line and "nested" in line, line


def test_a_deep_answer_from_the_api_server_is_named(apiserver, kubeconfig_for, dra):
    """The claims list comes back as 100,000 nested arrays inside an object (a fake server: a real
    one never sends that, but a proxy or a broken aggregated server might)."""
    page = '{"kind": "ResourceClaimList", "apiVersion": "resource.k8s.io/v1", "metadata": {}, "items": ' + DEEP + "}"
    apiserver.fail(200, resource="resourceclaims", raw=page.encode())
    result = dra("claims", "-A", "--kubeconfig", str(kubeconfig_for(apiserver)))
    assert result.exit_code == 3, result
    assert result.stderr.startswith("error: ") and SAID in result.stderr and "bug" not in result.stderr, result.stderr


# -- node files: verify --cgroup-root and the agent ------------------------------------------------------

@pytest.fixture
def node(tmp_path):
    """The example node's files, to plant a deep one in."""
    target = tmp_path / "node"
    shutil.copytree(NODE, target, symlinks=True)
    return target


def node_args(node: Path) -> list[str]:
    return ["--snapshot", str(EXAMPLE), "--node", "worker-gpu-1", "--cgroup-root", str(node / "sys" / "fs" / "cgroup"),
            "--kubelet-root", str(node / "var" / "lib" / "kubelet"), "--cdi-dir", str(node / "var" / "run" / "cdi")]


def plant(node: Path, which: str) -> Path:
    path = {"cdi": node / "var" / "run" / "cdi" / "zz-deep.json",
            "cpu_manager_state": node / "var" / "lib" / "kubelet" / "cpu_manager_state",
            "dra_manager_state": node / "var" / "lib" / "kubelet" / "dra_manager_state"}[which]
    path.write_text(DEEP)
    return path


@pytest.mark.parametrize("which", ["cdi", "cpu_manager_state", "dra_manager_state"])
@pytest.mark.parametrize("program", ["verify", "agent"])
def test_a_deep_node_file_costs_that_file_and_the_scan_goes_on(node, which, program):
    """The agent exited 1 ("diverged") with a traceback on a node where one CDI spec was this deep.
    Now the file is named where its source is described, and the five pods are still checked: the
    example's one planted divergence stays the only one."""
    path = plant(node, which)
    args = (["verify", *node_args(node), "-o", "json"] if program == "verify"
            else ["scan", "--once", *node_args(node), "-o", "json"])
    result = run(*args, timeout=120, program=AGENT if program == "agent" else "kubectl_dra.cli:main")
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr and "this is a bug" not in stderr, stderr
    doc = json.loads(result.stdout)
    report = doc["items"][0] if "items" in doc else doc
    verdicts = [p["verdict"] for p in report["status"]["pods"]]
    assert len(verdicts) == 5 and verdicts.count("Diverged") == 1, verdicts
    sources = {s["name"]: s for s in report["status"].get("sources", [])}
    if which == "cdi":  # the runtime skips a spec it cannot parse; so does the reader, naming it
        assert str(path) in sources["cdi"]["message"]
    elif which == "dra_manager_state":
        assert sources["draCheckpoint"]["state"] == "corrupt" and SAID in sources["draCheckpoint"]["message"]
    else:
        assert str(path) in stderr and SAID in stderr, stderr
    assert result.returncode == 1  # the planted divergence (and, for the checkpoint, CheckpointCorrupt)
