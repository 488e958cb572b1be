"""--request-timeout is a deadline for the whole call (issue 37, item 5): an API server that sends
its headers and then one byte every half second, or an exec credential plugin that sleeps, kept a
command with `--request-timeout 3s` running past 20 s. Each now ends at the deadline with one
line naming what did not answer; without the flag the documented default bounds it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kubectl_dra.kube.client import DEFAULT_BUDGET

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    code = "import sys; sys.argv[0] = 'kubectl-dra'; from kubectl_dra.cli import main; main()"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    began = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                            env=env, cwd=ROOT)
    return result, time.monotonic() - began


def test_a_server_that_drips_its_answer_is_cut_at_the_deadline(dripping_server):
    result, took = run("claims", "-A", "--server", dripping_server, "--request-timeout", "3s")
    assert result.returncode == 3, result
    assert "did not finish its answer" in result.stderr and "(3s;" in result.stderr, result.stderr
    assert took < 8, took  # 3 s and the interpreter's start, not the 500 s the body would take


def test_an_exec_plugin_that_sleeps_is_cut_at_the_deadline(tmp_path):
    plugin = tmp_path / "plugin.sh"
    plugin.write_text("#!/bin/sh\nsleep 60\n")
    plugin.chmod(0o755)
    config = tmp_path / "config"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                                   "command": str(plugin), "interactiveMode": "Never"}}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    result, took = run("claims", "--kubeconfig", str(config), "--request-timeout", "3s")
    assert result.returncode == 3, result
    assert f"the exec credential plugin {plugin} did not answer within the request timeout (3s" in result.stderr
    assert took < 8, took


def test_without_the_flag_a_documented_default_bounds_each_call():
    """The README's figure is the code's: no call waits forever when the flag is not given."""
    from kubectl_dra.kube.client import Session

    import kubernetes.client

    session = Session(kubernetes.client.Configuration(host="http://127.0.0.1:1"))
    assert session.budget == DEFAULT_BUDGET == 120.0
    assert Session(kubernetes.client.Configuration(host="http://127.0.0.1:1"), request_timeout=0).budget is None
    assert f"{DEFAULT_BUDGET:g} s" in (ROOT / "README.md").read_text()
