"""The output channel (issue 37, item 3): a pipe whose reader has gone, stdout closed or full,
stderr closed. Each was a traceback or "this is a bug" with a wrong exit code, from every command
and from the agent. Now: a reader that went away ends the run quietly with 141 (what a shell
reports for kubectl, which dies of SIGPIPE there); stdout that cannot take the data is one line and
exit 3; a closed stderr loses the messages, never the exit code.

Real processes with real file descriptors: click's runner has no pipe to break."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster")
NODE = ROOT / "examples" / "nodes" / "worker-gpu-1"
NODE_ARGS = ["--snapshot", EXAMPLE, "--node", "worker-gpu-1", "--cgroup-root", str(NODE / "sys" / "fs" / "cgroup"),
             "--kubelet-root", str(NODE / "var" / "lib" / "kubelet"), "--cdi-dir", str(NODE / "var" / "run" / "cdi")]
PROGRAMS = {"kubectl-dra": "kubectl_dra.cli:main", "dra-node-agent": "node_agent.__main__:main",
            "kubectl_complete-dra": "kubectl_dra.cli.completion:main"}

COMMANDS = {
    "claims": ["kubectl-dra", "claims", "-A", "--snapshot", EXAMPLE],
    "explain pod": ["kubectl-dra", "explain", "pod", "embedder", "-n", "ml", "--snapshot", EXAMPLE],
    "verify": ["kubectl-dra", "verify", "--snapshot", EXAMPLE],
    "taints": ["kubectl-dra", "taints", "--snapshot", EXAMPLE],
    "overlays": ["kubectl-dra", "overlays", "--snapshot", EXAMPLE],
    "help": ["kubectl-dra", "--help"],
    "agent scan": ["dra-node-agent", "scan", "--once", *NODE_ARGS],
    "completion": ["kubectl_complete-dra", "claims", "--snapshot", EXAMPLE, ""],
}


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    program, *args = argv
    module, func = PROGRAMS[program].split(":")
    code = f"import sys; sys.argv[0] = {program!r}; from {module} import {func}; {func}()"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, timeout=120, **kwargs)


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_a_reader_that_went_away_ends_the_run_quietly(command):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write: `| true`
    try:
        result = run(COMMANDS[command], stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert result.returncode == 141, result
    assert "Traceback" not in result.stderr and "error" not in result.stderr.lower() \
        and "Exception ignored" not in result.stderr, result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_stdout_that_cannot_take_the_data_is_one_line_and_exit_3(command):
    with open("/dev/full", "w") as full:
        result = run(COMMANDS[command], stdout=full, stderr=subprocess.PIPE, text=True)
    assert result.returncode == 3, result
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert errors == ["error: cannot write the output: No space left on device"], result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr


@pytest.mark.parametrize("command", ["claims", "agent scan", "help"])
def test_a_closed_stdout_is_one_line_and_exit_3(command):
    result = run(COMMANDS[command], stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1))
    assert result.returncode == 3, result
    assert [line for line in result.stderr.splitlines() if line.startswith("error")] == [
        "error: cannot write the output: standard output is closed"], result.stderr


def test_a_closed_stderr_keeps_the_exit_code(tmp_path):
    """A missing --snapshot is 3 (nothing shown) whether or not the message can be written."""
    result = run(["kubectl-dra", "claims", "--snapshot", str(tmp_path / "missing")], stdout=subprocess.PIPE,
                 preexec_fn=lambda: os.close(2))
    assert result.returncode == 3 and result.stdout == b""
    agent = run(["dra-node-agent", "scan", "--once", *NODE_ARGS], stdout=subprocess.PIPE,
                preexec_fn=lambda: os.close(2))
    assert agent.returncode == 1 and b"1 diverged" in agent.stdout  # the example's planted divergence, said
