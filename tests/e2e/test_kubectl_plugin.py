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
    from kubectl_dra.cli.completion import complete

    assert complete(["__complete", "ex"])[0].startswith("explain\t")
    assert complete(["explain", "cl"])[0].startswith("claim\t")
    options = complete(["claims", "--o"])
    assert any(line.startswith("--output\t") for line in options)
    assert complete([])[-1] == ":4"
