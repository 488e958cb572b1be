"""``kubectl dra`` through a real kubectl: plugin discovery on PATH and shell completion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from k8s_build import kubectl_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
BIN = Path(sys.executable).parent


def scripts_present() -> bool:
    return (BIN / "kubectl-dra").exists() and (BIN / "kubectl_complete-dra").exists()


KUBECTL = kubectl_path()
needs_kubectl = pytest.mark.skipif(KUBECTL is None or not scripts_present(),
                                   reason="needs a kubectl binary and the installed console scripts")


def run(*cmd: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, **kw)


@pytest.mark.kubectl
@needs_kubectl
def test_kubectl_finds_and_runs_the_plugin():
    listed = run(KUBECTL, "plugin", "list")
    assert str(BIN / "kubectl-dra") in listed.stdout
    via_kubectl = run(KUBECTL, "dra", "claims", "-A", "--snapshot", str(EXAMPLE), "-o", "json")
    direct = run(str(BIN / "kubectl-dra"), "claims", "-A", "--snapshot", str(EXAMPLE), "-o", "json")
    assert via_kubectl.returncode == direct.returncode
    assert via_kubectl.stdout == direct.stdout and '"kind": "ClaimList"' in direct.stdout
    usage = run(KUBECTL, "dra", "--help")
    assert usage.stdout.startswith("Usage: kubectl dra ")


@pytest.mark.kubectl
@needs_kubectl
def test_kubectl_completes_plugin_commands():
    result = run(KUBECTL, "__complete", "dra", "cl")
    lines = result.stdout.splitlines()
    assert lines[0].startswith("claims\t")
    assert lines[-1] == ":4"


def test_completion_protocol_directly():
    """cobra's protocol: one ``value<TAB>description`` line per candidate (the description is the
    command's short help), then ``:4`` (ShellCompDirectiveNoFileComp: a command or flag name is no file)."""
    import click

    from kubectl_dra.cli import cli
    from kubectl_dra.cli.completion import complete

    def line(group: click.Group, name: str) -> str:
        return f"{name}\t{group.get_command(click.Context(group), name).get_short_help_str()}"

    explain = cli.get_command(click.Context(cli), "explain")
    # no word yet: every command; "ex": only explain; "explain cl": only its claim (of claim, node, pod)
    assert complete([]) == [line(cli, name) for name in cli.list_commands(click.Context(cli))] + [":4"]
    assert complete(["__complete", "ex"]) == [line(cli, "explain"), ":4"]
    assert complete(["explain", "cl"]) == [line(explain, "claim"), ":4"]
    # the flags of `claims` that start with --o: the shared -o/--output and kubectl get's --output-watch-events
    assert [entry.split("\t")[0] for entry in complete(["claims", "--o"])] == \
        ["--output", "--output-watch-events", ":4"]
    # the console script answers on stdout, one line each, and exits 0 (kubectl reads nothing else)
    answer = subprocess.run([sys.executable, "-c", "from kubectl_dra.cli.completion import main; main()",
                             "__complete", "ex"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (answer.returncode, answer.stdout, answer.stderr) == (0, f"{line(cli, 'explain')}\n:4\n", "")


SNAP = ["--snapshot", str(EXAMPLE)]


@pytest.mark.parametrize("words,expected", [
    # every flag, the connection flags (hidden from --help) included
    (["claims", "--kubec"], ["--kubeconfig", ":4"]),
    (["claims", "--as"], ["--as", "--as-group", "--as-uid", ":4"]),
    (["explain", "pod", "--request-t"], ["--request-timeout", ":4"]),
    (["verify", "--cgroup-d"], ["--cgroup-driver", ":4"]),
    (["claims", "-A", "--all-n"], [":4"]),  # -A given: --all-namespaces is not offered again
    (["overlays", "--nodepool", "a", "--nodep"], ["--nodepool", ":4"]),  # repeatable: still offered
    # values of choice flags and of --sort-by
    (["claims", "-o", ""], ["table", "wide", "json", "yaml", "name", ":4"]),
    (["claims", "--sort-by", "f"], ["findings", ":4"]),
    (["claims", "--sort-by", ".metadata.c"], [".metadata.creationTimestamp", ":4"]),
    (["verify", "--cgroup-driver", ""], ["systemd", "cgroupfs", ":4"]),
    # files and directories: the shell completes them (cobra directives 0, 8, 16)
    (["claims", "--kubeconfig", ""], [":0"]),
    (["claims", "--snapshot", ""], [":0"]),
    (["explain", "pod", "--certificate-authority", ""], [":0"]),
    (["overlays", "--catalog", ""], ["yaml", "yml", "json", ":8"]),
    (["snapshot", "-o", ""], [":16"]),
    (["verify", "--cgroup-root", ""], [":16"]),
    # object names from the snapshot the words point at, in the namespace they select
    (["explain", "claim", *SNAP, "-n", "default", ""], ["eval-gpu", "eval-replay-gpu", "risk-engine-cpus", ":4"]),
    (["explain", "pod", "-n", "ml", *SNAP, "e"], ["embedder", ":4"]),
    ([*SNAP, "explain", "node", ""], ["worker-cpu-1", "worker-gpu-1", "worker-gpu-2", ":4"]),
    (["verify", *SNAP, "--node", "worker-g"], ["worker-gpu-1", "worker-gpu-2", ":4"]),
    (["explain", "claim", *SNAP, "-n", "ml", "--pod", "tr"], ["trainer-0-h6h2p", "trainer-1-gl2xk", ":4"]),
    (["overlays", *SNAP, "--nodepool", ""], ["default", "gpu", ":4"]),
    (["claims", *SNAP, "-n", ""], ["default", "ml", ":4"]),
    # devices: its flags, and the nodes, drivers, pools and classes the snapshot holds
    (["devices", "--p"], ["--pool", "--partition-attribute", ":4"]),
    (["devices", *SNAP, "--driver", "dra."], ["dra.cpu", "dra.memory", "dra.net", ":4"]),
    (["devices", *SNAP, "--pool", "worker-g"], ["worker-gpu-1", "worker-gpu-2", ":4"]),
    (["devices", *SNAP, "--class", "gpu"], ["gpu.example.com", ":4"]),
    (["devices", *SNAP, "--node", "worker-c"], ["worker-cpu-1", ":4"]),
    # nothing readable: no candidates, never an error in the user's shell
    (["explain", "claim", "--snapshot", "/nonexistent", ""], [":4"]),
    (["explain", "pod", "--server", "http://127.0.0.1:1", ""], [":4"]),
])
def test_completion_table(words, expected):
    from kubectl_dra.cli.completion import complete

    assert [line.split("\t")[0] for line in complete(words)] == expected


@pytest.mark.kubectl
@needs_kubectl
def test_kubectl_passes_file_and_name_completion_through():
    files = run(KUBECTL, "__complete", "dra", "overlays", "--catalog", "")
    assert files.stdout.splitlines() == ["yaml", "yml", "json", ":8"]
    names = run(KUBECTL, "__complete", "dra", "explain", "node", "--snapshot", str(EXAMPLE), "")
    assert names.stdout.splitlines() == ["worker-cpu-1", "worker-gpu-1", "worker-gpu-2", ":4"]
