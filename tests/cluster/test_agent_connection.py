"""The agent holds one TCP connection to the real API server, whatever the number of its watches
(issue 41): its pods, its Node and eight claims are ten HTTP/2 streams on one connection, as a
kubelet's are. When the server's side drops it, every watch fails at once, the next scan lists
again over one new connection, and changes after that are seen through the new watches.

Counted on both sides of a TCP proxy in front of the server: the connections the proxy accepted
(the server's side) and this process's sockets to the proxy (the agent's side)."""

from __future__ import annotations

import os
import socket
import threading
import time

import psutil
import pytest
from clusterobjects import wait_for
from controlplane import started
from gpunode import gpu_node_objects, write_node_files
from loader import load
from test_connection import CountingProxy
from test_least_privilege import ROOT

from kubectl_dra.kube.options import KubeOptions
from node_agent.service import Agent, AgentConfig

NODE, NAMESPACE, CLAIMS = "conn-node", "conn", 8
INTERVAL = 1.0


class DroppingProxy(CountingProxy):
    """A counting proxy that can cut every connection through it, as a server or load balancer
    that goes away does."""

    def __init__(self, target):
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        super().__init__(target)

    def _pipe(self, src, dst):
        with self.lock:
            self.open += [src, dst]
        super()._pipe(src, dst)

    def drop(self) -> None:
        with self.lock:
            cut, self.open = self.open, []
        for s in cut:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def sockets_to(port: int) -> int:
    """This process's established TCP connections to ``port`` on loopback."""
    return sum(1 for c in psutil.Process(os.getpid()).net_connections(kind="tcp")
               if c.status == psutil.CONN_ESTABLISHED and c.raddr and c.raddr.port == port)


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    plane = started(tmp_path_factory.mktemp("connection-plane"))
    try:
        plane.kubectl("apply", "-k", str(ROOT / "manifests"))
        plane.kubectl("wait", "--for=condition=Established", "crd/nodeenforcementreports.kubectl-dra.io")
        yield plane
    finally:
        plane.stop()


def test_every_watch_on_one_connection_which_recovers_when_dropped(plane, tmp_path):
    load(plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
                 *gpu_node_objects(NODE, NAMESPACE, CLAIMS)])
    pods = plane.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    claims = plane.request("GET", f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims")["items"]
    write_node_files(tmp_path / "node", pods, claims)
    host, port = plane.url.removeprefix("https://").rsplit(":", 1)
    proxy = DroppingProxy((host, int(port)))
    token = plane.service_account_token("kubectl-dra-system", "dra-node-agent")
    kubeconfig = plane.kubeconfig(tmp_path / "agent.kubeconfig", token=token, user="dra-node-agent")
    kubeconfig.write_text(kubeconfig.read_text().replace(plane.url, f"https://127.0.0.1:{proxy.port}"))
    agent = Agent(AgentConfig(node=NODE, cgroup_root=str(tmp_path / "node" / "fs" / "cgroup"), interval=INTERVAL,
                              kubelet_root=str(tmp_path / "node" / "kubelet"), cdi_dirs=(), publish=True),
                  KubeOptions(kubeconfig=str(kubeconfig)))
    watches = CLAIMS + 2  # its pods, its Node, each claim
    agent.start()
    try:
        wait_for("the first report written and every watch open",
                 lambda: agent.report is not None and agent.publisher is not None
                 and agent.publisher.current(agent.report) and agent.source.open_watches() == watches, 60)
        assert agent.report.status.summary.claims == CLAIMS and agent.report.status.summary.pods == CLAIMS
        assert proxy.connections == 1  # the server's side: one connection accepted
        assert sockets_to(proxy.port) == 1  # the agent's side: one socket
        assert agent.session.protocols == {"HTTP/2"}
        time.sleep(2 * INTERVAL)  # scans come and go; nothing opens another connection
        assert (proxy.connections, sockets_to(proxy.port)) == (1, 1)

        proxy.drop()
        wait_for("every watch open again after the drop",
                 lambda: proxy.connections >= 2 and agent.source.open_watches() == watches, 60)
        assert proxy.connections == 2  # one new connection, not one per watch
        wait_for("the dropped socket closed", lambda: sockets_to(proxy.port) == 1, 30)

        # a change after the recovery is seen through the new watches
        plane.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{NODE}-p0?gracePeriodSeconds=0")
        wait_for("the pod's deletion in the written report",
                 lambda: agent.report.status.summary.pods == CLAIMS - 1 and agent.publisher.current(agent.report), 30)
        assert (proxy.connections, sockets_to(proxy.port)) == (2, 1)
    finally:
        agent.shutdown()
        proxy.close()
