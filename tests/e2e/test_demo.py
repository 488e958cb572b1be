"""The README's first command on a fresh copy: `scripts/demo` makes its own .venv, installs, and runs
the main job on the bundled example, with nothing on stderr (no packaging noise, no traceback)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs git to list the repository's files")
    return [f for f in out.decode().split("\0") if f]


def test_demo_on_a_fresh_copy(tmp_path):
    copy = tmp_path / "kubectl-dra"
    for name in [n for n in tracked_files() if (ROOT / n).is_file()]:
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["PYTHON"] = getattr(sys, "_base_executable", sys.executable)  # a plain python3, not this .venv's
    result = subprocess.run(["bash", "scripts/demo"], cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    assert result.stderr == "", result.stderr[-3000:]
    assert result.returncode == 0, result.stdout[-3000:]
    check_demo_output(result.stdout)
    assert (copy / ".venv" / "bin" / "kubectl-dra").exists()


def check_demo_output(stdout: str) -> None:
    blocks = demo_blocks(stdout)
    # the commands shown are the script's own `show` lines, in order, with $SNAP and $NODE filled in
    assert list(blocks) == demo_commands(ROOT / "scripts" / "demo")
    # README "## Exit codes": 1 only for `taints` finding pods a rule would evict (the dry run drains
    # worker-gpu-2, where notebooks and eval pods hold claims) and for `verify` finding divergences
    # (the example's planted ones: examples/cluster/README.md); every other command succeeds
    ones = {"kubectl-dra taints --dry-run -f examples/taint-rules/drain-worker-gpu-2.yaml --snapshot examples/cluster",
            "kubectl-dra verify --snapshot examples/cluster",
            "kubectl-dra verify --snapshot examples/cluster --node worker-gpu-1 --cgroup-root "
            "examples/nodes/worker-gpu-1/sys/fs/cgroup --kubelet-root examples/nodes/worker-gpu-1/var/lib/kubelet "
            "--cdi-dir examples/nodes/worker-gpu-1/var/run/cdi"}
    assert {command: exit_code for command, (exit_code, _) in blocks.items()} == {
        command: 1 if command in ones else 0 for command in blocks}
    # each planted problem (examples/cluster/README.md) shows in the command made to show it
    expected = {"kubectl-dra claims -A -o wide --sort-by findings --snapshot examples/cluster":
                {"StaleReservation", "ReferencedButNotReserved", "Unsatisfiable", "DeviceUnhealthy"},
                "kubectl-dra explain pod debug-shell -n ml --snapshot examples/cluster": {"ReferencedButNotReserved"},
                "kubectl-dra explain pod batch-embed -n ml --snapshot examples/cluster": {"Unsatisfiable"},
                "kubectl-dra taints --snapshot examples/cluster": {"DeviceUnhealthy"}}
    for command in ones:
        expected[command] = {"WouldEvict"} if "taints" in command else {"CDIDeviceMissing", "DRAAmountMissing"}
    for command, reasons in expected.items():
        assert reasons <= set(re.findall(r"[A-Z][A-Za-z]+", blocks[command][1])), command
    assert "Traceback" not in stdout


SHOWN = "\x1b[1m$ "


def demo_blocks(stdout: str) -> dict[str, tuple[int, str]]:
    """Each command the demo shows -> (its exit code, its output): ``show`` prints the command in bold
    and, when it fails, ``(exit code N)`` as the block's last line."""
    blocks: dict[str, tuple[int, str]] = {}
    for chunk in stdout.split(SHOWN)[1:]:
        header, _, body = chunk.partition("\n")
        lines = body.rstrip("\n").splitlines()
        code = int(lines[-1][len("(exit code "):-1]) if lines and lines[-1].startswith("(exit code ") else 0
        blocks[header.removesuffix("\x1b[0m")] = (code, body)
    return blocks


def demo_commands(script: Path) -> list[str]:
    """The script's ``show`` lines (continuations joined), its variables expanded."""
    text = script.read_text().replace("\\\n", "")
    values = dict(re.findall(r"^(\w+)=(\S+)$", text, re.M))
    return [re.sub(r'"\$(\w+)([^"]*)"', lambda m: values[m.group(1)] + m.group(2), " ".join(line.split()[1:]))
            for line in text.splitlines() if line.startswith("show ")]
