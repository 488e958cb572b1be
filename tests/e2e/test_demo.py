"""The README's first command on a fresh copy: `scripts/demo` makes its own .venv, installs, and runs
the main job on the bundled example, with nothing on stderr (no packaging noise, no traceback)."""

from __future__ import annotations

import os
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
    shown = [line for line in result.stdout.splitlines() if line.startswith("\x1b[1m$ ")]
    assert len(shown) == 12
    assert "ReferencedButNotReserved" in result.stdout and "DRAAmountMissing" in result.stdout
    assert "Unsatisfiable" in result.stdout and "CDIDeviceMissing" in result.stdout
    assert "WouldEvict" in result.stdout and "DeviceUnhealthy" in result.stdout
    assert "Traceback" not in result.stdout
    assert (copy / ".venv" / "bin" / "kubectl-dra").exists()
