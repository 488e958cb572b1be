"""The agent image leaves out what the agent never loads (scripts/image_contents.py); here the agent
runs its real modes in a fresh interpreter and must load nothing the image lacks.

``scan --once`` against a live (local) API server with every node source (a cgroup tree, the
kubelet's checkpoint, CDI specs, a real PodResources gRPC server) and ``--check-network``, then
``run``, which watches, publishes the report and Events and serves /metrics, until it has published
and is stopped. Every module either loads is one the image carries: this project's among
``agent_modules()``, the rest from a distribution ``pins()`` names and outside ``LEFT_OUT``. The
static closure is a superset of what loads, so a module that loads here but is missing from it means
the closure reader is wrong; a module from a left-out part means the image would crash there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_node_dra import NODE, Node

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import image_contents  # noqa: E402
from podresources_server import PodResourcesServer, pod_resources  # noqa: E402

# the agent's entry point, writing every module it loaded from a file outside the standard library
# (sys.modules at exit less those the interpreter's start-up loaded, such as this venv's .pth hooks;
# no built-in, no module a native extension registers) to the file in $LOADED
AGENT = ("import atexit, os, sys, sysconfig; std = sysconfig.get_paths()['stdlib']; before = set(sys.modules); "
         "atexit.register(lambda: open(os.environ['LOADED'], 'w').write('\\n'.join(sorted("
         "n for n, m in list(sys.modules.items()) if n not in before and getattr(m, '__file__', None) and "
         "not m.__file__.startswith(std))))); "
         "from node_agent.__main__ import main; sys.argv = ['dra-node-agent', *sys.argv[1:]]; main()")


def left_out(name: str) -> bool:
    path = name.replace(".", "/")
    for pattern, _ in image_contents.LEFT_OUT:
        prefix = pattern.removesuffix("/*")
        if pattern.endswith("/*") and path.startswith(prefix + "/"):
            return True
        if not pattern.endswith("/*") and "*" not in pattern and (path == prefix or path.startswith(prefix + "/")):
            return True
    return False


def not_carried(names: set[str]) -> list[str]:
    ours, _ = image_contents.agent_modules()
    import importlib.metadata as metadata

    providers = metadata.packages_distributions()
    carried = set(image_contents.pins())
    missing = []
    for name in sorted(names):
        top = name.split(".")[0]
        if top in ("kubectl_dra", "node_agent"):
            if name not in ours:
                missing.append(f"{name} (not in agent_modules())")
        elif top in sys.stdlib_module_names:
            continue
        elif not {d.lower().replace("_", "-") for d in providers.get(top, [])} & carried:
            missing.append(f"{name} (its distribution is not pinned for the image)")
        elif left_out(name):
            missing.append(f"{name} (LEFT_OUT)")
    return missing


@pytest.fixture
def node_with_sources(tmp_path, make_apiserver, kubeconfig_for):
    node = Node(tmp_path)
    args = node.write()
    socket_dir = node.kubelet / "pod-resources"
    socket_dir.mkdir(parents=True, exist_ok=True)
    live = [a for a in args if a != "--snapshot" and a != str(tmp_path / "snap")]
    node_object = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "node-uid"}, "status": {}}
    server = make_apiserver([*node.pods, *node.claims, node_object], served={"kubectl-dra.io": ["v1alpha1"]})
    rows = [pod_resources("ml", "trainer", {"main": [{"claim": "gpu-a", "driver": "gpu.example.com", "pool": NODE,
                                                       "device": "gpu-0", "cdi": ["example.com/gpu=gpu-0"]}]})]
    with PodResourcesServer(str(socket_dir / "kubelet.sock"), rows):
        yield live, str(kubeconfig_for(server)), server


def run_agent(args: list[str], env: dict, loaded: Path, *, until=None, timeout: float = 120
              ) -> tuple[int, str, str, set[str]]:
    """The agent in a fresh interpreter: exit code, stdout, stderr and the modules it loaded."""
    proc = subprocess.Popen([sys.executable, "-c", AGENT, *args], cwd=ROOT, env={**env, "LOADED": str(loaded)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if until is not None:
        deadline = time.monotonic() + timeout
        while not until() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err, set(loaded.read_text().split()) if loaded.exists() else set()


def test_the_agents_modes_load_only_what_the_image_carries(node_with_sources, tmp_path):
    args, kubeconfig, server = node_with_sources
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "KUBECONFIG": kubeconfig}
    rc, out, err, scanned = run_agent([*args, "-o", "json"], env, tmp_path / "scan.modules")
    assert rc in (0, 1, 4), err[-3000:]
    doc = json.loads(out)
    assert {s["name"]: s["state"] for s in doc["status"]["sources"]}["podResources"] == "read"  # gRPC loaded

    def published() -> bool:
        return any(r.method in ("POST", "PATCH", "PUT") and r.path.startswith("/apis/kubectl-dra.io/")
                   for r in list(server.requests))

    run_args = [a for a in args if a not in ("scan", "--once")]
    rc, _, err, ran = run_agent(["run", *run_args, "--listen", "127.0.0.1:0", "--interval", "1", "--check-network"],
                                env, tmp_path / "run.modules", until=published)
    assert published(), err[-3000:]
    assert rc == 0, err[-3000:]
    for names in (scanned, ran):
        assert {"grpc", "pyroute2", "prometheus_client", "kubernetes.client.api_client"} & names  # not vacuous
    assert "grpc" in scanned and "prometheus_client" in ran
    missing = not_carried(scanned | ran)
    assert missing == [], "\n".join(missing)


def test_the_check_fails_for_a_module_the_image_leaves_out():
    assert not_carried({"cel_expr_python", "kubernetes.client.models.v1_pod", "kubernetes.aio.client",
                        "kubectl_dra.allocation.allocator", "msgspec.json"}) == [
        "cel_expr_python (its distribution is not pinned for the image)",
        "kubectl_dra.allocation.allocator (not in agent_modules())",
        "kubernetes.aio.client (LEFT_OUT)",
        "kubernetes.client.models.v1_pod (LEFT_OUT)",
        "msgspec.json (its distribution is not pinned for the image)"]
    assert not_carried({"kubernetes.client.models", "kubernetes.client.api_client", "grpc._cython.cygrpc",
                        "node_agent.service", "json"}) == []
