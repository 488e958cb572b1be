"""Terminal safety (CVE-2021-25743's class): bytes from objects and files never reach the terminal as
escape sequences. Names, messages, labels, device attributes, taints, overlay names and cgroup file
contents carry an OSC title change, a clear-screen CSI, a C1 CSI, a bell and a carriage return
through every command's table, tree, ``-o name``, ``--no-headers`` and stderr; each must come out
escaped as kubectl escapes (ESC as ``^[``, CR as ``\\r``; the other controls in the same spirit),
while JSON and YAML keep the exact value, encoded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from builders import claim, pod, reserved_pod, resource_slice
from click.testing import CliRunner

from kubectl_dra.text import terminal_safe

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
NODE_TREE = ROOT / "examples" / "nodes" / "worker-gpu-1"
GPU = "gpu.example.com"

EVIL = "\x1b]0;pwned\x07\x1b[2J\x9b31m\r\x08\x7f"
RAW = ("\x1b", "\x07", "\x9b", "\r", "\x08", "\x7f")  # none of these may be printed


def hostile_objects() -> list[dict]:
    """A pod, its claim, the slice its device is in, a DeviceTaintRule and a NodeOverlay, each
    carrying EVIL where a person would read it."""
    victim = pod("victim" + EVIL, claims={"gpu": "evil" + EVIL}, node="worker-gpu-1",
                 labels={"team": "red" + EVIL})
    victim["metadata"]["annotations"] = {"note": EVIL}
    victim["status"]["conditions"] = [{"type": "Ready", "status": "False", "message": "boom" + EVIL}]
    device = {"name": "gpu-9" + EVIL, "attributes": {"model": {"string": "GPU" + EVIL}},
              "capacity": {"memory": {"value": "80Gi"}}}
    hostile_claim = claim("evil" + EVIL, devices=[(GPU, "evil-pool" + EVIL, "gpu-9" + EVIL)], node="worker-gpu-1",
                          reserved_for=[reserved_pod(victim), {"resource": "pods", "name": "gone" + EVIL,
                                                                "uid": "00000000-0000-0000-0000-00000000dead"}],
                          labels={"team": "red" + EVIL})
    hostile_slice = resource_slice("worker-gpu-1", GPU, [device])
    hostile_slice["metadata"]["name"] = "evil-slice" + EVIL
    hostile_slice["spec"]["pool"]["name"] = "evil-pool" + EVIL
    hostile_slice["spec"]["devices"][0]["taints"] = [{"key": "example.com/evil" + EVIL, "value": EVIL,
                                                      "effect": "NoSchedule"}]
    overlay = {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
               "metadata": {"name": "overlay" + EVIL, "uid": "u-overlay", "creationTimestamp": "2026-11-20T08:00:00Z"},
               "spec": {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                          "values": ["g6e.12xlarge"]}],
                        "priceAdjustment": "-5%", "weight": 10}}
    return [victim, hostile_claim, hostile_slice, overlay]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Path:
    """The example cluster with the hostile objects added, and a rule that taints their pool."""
    root = tmp_path_factory.mktemp("hostile")
    shutil.copytree(EXAMPLE, root / "cluster")
    (root / "cluster" / "hostile.yaml").write_text(yaml.safe_dump_all(hostile_objects()))
    rule = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "rule" + EVIL},
            "spec": {"deviceSelector": {"driver": GPU, "pool": "evil-pool" + EVIL},
                     "taint": {"key": "example.com/drain" + EVIL, "value": EVIL, "effect": "NoExecute"}}}
    (root / "rule.yaml").write_text(yaml.safe_dump(rule))
    return root


def assert_safe(result, *, shows_escaped: bool = True) -> None:
    for stream, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        for ch in RAW:
            assert ch not in text, f"{ch!r} reached the terminal on {stream}:\n{text!r}"
    assert "Traceback" not in result.stderr
    if shows_escaped:  # the data was printed, escaped, not dropped
        assert "^[]0;pwned^G^[[2J" in result.stdout + result.stderr, result.stdout + result.stderr


COMMANDS = [
    (["claims", "-A"], True),
    (["claims", "-A", "-o", "wide"], True),
    (["claims", "-A", "--no-headers"], True),
    (["claims", "-A", "-o", "name"], True),
    (["claims", "-A", "--findings"], True),
    (["explain", "claim", "evil" + EVIL, "-n", "ml"], True),
    (["explain", "pod", "victim" + EVIL, "-n", "ml"], True),
    (["explain", "node", "worker-gpu-1"], True),
    (["taints"], True),
    (["taints", "-o", "wide"], True),
    (["taints", "--no-headers"], True),
    (["overlays"], True),
    (["overlays", "-o", "wide", "--no-headers"], True),
    (["verify"], False),
    (["verify", "-o", "wide"], False),
    (["explain", "claim", "nothing-here" + EVIL, "-n", "ml"], True),  # not found: the name on stderr
]


@pytest.mark.parametrize("args,shows", COMMANDS, ids=[" ".join(a).encode("unicode_escape").decode() for a, _ in COMMANDS])
def test_every_command_escapes_what_it_prints(args, shows, snapshot, dra):
    result = dra(*args, "--snapshot", str(snapshot / "cluster"))
    assert result.exit_code in (0, 1, 3, 4), result
    assert_safe(result, shows_escaped=shows)


@pytest.mark.parametrize("no_headers", [False, True])
def test_a_dry_run_of_a_hostile_rule(snapshot, dra, no_headers):
    result = dra("taints", "--dry-run", "-f", str(snapshot / "rule.yaml"), "--snapshot", str(snapshot / "cluster"),
                 *(["--no-headers"] if no_headers else []))
    assert result.exit_code in (0, 1, 4), result
    assert_safe(result)
    assert "Dry run of DeviceTaintRule rule^[]0;pwned^G" in (result.stderr if no_headers else result.stdout)


def test_documents_keep_the_exact_value_encoded(snapshot, dra):
    """JSON and YAML are encoded, not escaped for a terminal: the value survives exactly, and no raw
    control character (not even DEL or a C1 CSI, which json.dumps leaves alone) is printed."""
    for fmt, load in (("json", json.loads), ("yaml", yaml.safe_load)):
        result = dra("claims", "-A", "-o", fmt, "--snapshot", str(snapshot / "cluster"))
        for ch in RAW:
            assert ch not in result.stdout, (fmt, ch)
        assert "evil" + EVIL in [item["name"] for item in load(result.stdout)["items"]]


def test_cgroup_file_contents_are_escaped(tmp_path, dra):
    """A cgroup file is read on the node: what it holds is printed as the OBSERVED value."""
    tree = tmp_path / "worker-gpu-1"
    shutil.copytree(NODE_TREE, tree, symlinks=True)
    container = next(p.parent for p in (tree / "sys/fs/cgroup").rglob("cri-containerd-*.scope/memory.max"))
    (container / "memory.max").write_bytes(("42" + EVIL + "\n").encode())
    result = dra("verify", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1",
                 "--cgroup-root", str(tree / "sys/fs/cgroup"), "--kubelet-root", str(tree / "var/lib/kubelet"))
    assert result.exit_code in (1, 4), result
    assert_safe(result)

    from node_agent.__main__ import cli as agent_cli

    scanned = CliRunner().invoke(agent_cli, ["scan", "--once", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1",
                                             "--cgroup-root", str(tree / "sys/fs/cgroup"),
                                             "--kubelet-root", str(tree / "var/lib/kubelet")])
    assert scanned.exit_code in (1, 2), scanned.output
    assert_safe(scanned)


def test_usage_errors_that_name_objects_are_escaped(snapshot, dra):
    """A pod with several claims and none chosen: the usage error names them (click prints it)."""
    two = pod("two-claims", claims={"a" + EVIL: "x", "b": "y"}, node="worker-gpu-1")
    (snapshot / "cluster" / "two.yaml").write_text(yaml.safe_dump(two))
    try:
        result = dra("explain", "claim", "--pod", "two-claims", "-n", "ml", "--snapshot", str(snapshot / "cluster"))
    finally:
        (snapshot / "cluster" / "two.yaml").unlink()
    assert result.exit_code == 2, result
    assert_safe(result)


@pytest.mark.parametrize("raw,shown", [
    ("\x1b]0;pwned\x07", "^[]0;pwned^G"),  # kubectl: ESC -> ^[
    ("a\rb", "a\\rb"),  # kubectl: CR -> \r
    ("\x1b[2J", "^[[2J"),
    ("\x9b2J", "\\u009b2J"),  # C1 CSI: a terminal reads it as ESC [
    ("\x00\x08\x7f", "^@^H^?"),
    ("\udcff", "\\xff"),  # a byte that was not UTF-8 (surrogateescape)
    ("tab\tand\nnewline", "tab\tand\nnewline"),  # the text's own layout
    ("plain ünïcode ✓", "plain ünïcode ✓"),
])
def test_the_escape_rule(raw, shown):
    assert terminal_safe(raw) == shown


def test_colour_is_real_and_data_still_escaped(snapshot, dra):
    """With --color always, our colour codes reach the terminal; the data's never do."""
    result = dra("claims", "-A", "--color", "always", "--snapshot", str(snapshot / "cluster"))
    assert "\x1b[32mallocated,reserved\x1b[0m" in result.stdout
    assert "^[]0;pwned^G^[[2J" in result.stdout
    assert "\x1b]" not in result.stdout and "\x1b[2J" not in result.stdout and "\x07" not in result.stdout
