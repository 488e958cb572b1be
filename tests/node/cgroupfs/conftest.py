"""The cgroupfs boot (boots.py) and what its tests share.

- ``cgroupfs_node``: the node booted with the matrix's pods Running, for this package's tests; its
  VM is stopped after them. Tests that change the node put it back as they found it.
- ``deployed``: the agent as its users run it on that node, reached through an upgrade. First the
  previous release (its image built from its recorded commit, its own manifests from that commit,
  with the node-dra-state overlay most nodes run), then ``kubectl apply -k`` of this checkout's, as
  an operator upgrades: each through an operator's kustomization (the registry's image name, a 5 s
  interval instead of 60 s). Every version of the report written meanwhile is kept for the upgrade
  test. It stays deployed for the package: the fault and DaemonSet tests read it.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from agentpod import INTERVAL, Agent, Overlay, all_match
from boots import CGROUPFS, CGROUPFS_KUBELET, boot, stop
from nodecheck import verdicts
from realnode import ContainerdSettings
from vm import ROOT

import matrix

from kubectl_dra import __version__

WITNESS = {"apiVersion": "kubectl-dra.io/v1alpha1", "kind": "NodeEnforcementReport",
           "metadata": {"name": "upgrade-witness", "labels": {"kubectl-dra.io/test": "upgrade"}}}
WITNESS_STATUS = {"status": {"observedAt": "2026-01-01T00:00:00Z", "summary": {"pods": 1, "matched": 1}}}


@pytest.fixture(scope="package")
def cgroupfs_node(node_plane, registry, tmp_path_factory):
    booted = boot(node_plane, tmp_path_factory.mktemp("nodes"), CGROUPFS, mode="cgroupfs", kubelet=CGROUPFS_KUBELET,
                  containerd=ContainerdSettings(), disk=True, registry_port=registry.port)
    yield booted
    stop(booted.node)


@dataclass
class Deployment:
    """The deployed agent, and what happened on the way from the previous release to this one."""

    agent: Agent
    previous_pod: dict  # the previous release's agent pod, as it ran
    current_pod: dict  # this checkout's, after the upgrade
    previous_report: dict  # the last report the previous release wrote
    upgrade_versions: list[dict] = field(default_factory=list)  # every report version during the upgrade
    witness: dict = field(default_factory=dict)  # a report object stored before the CRD changed


def previous_manifests(commit: str, into: Path) -> Path:
    """The previous release's manifests/, as its commit has them."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "manifests"], capture_output=True,
                             timeout=60, check=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True, timeout=60)
    return into / "manifests"


@pytest.fixture(scope="package")
def deployed(cgroupfs_node, agent_images, tmp_path_factory):
    agent = Agent(cgroupfs_node)
    node, plane = cgroupfs_node.node, cgroupfs_node.plane
    work = tmp_path_factory.mktemp("deploy")
    release = agent_images.previous_release
    old = previous_manifests(release.commit, work / "previous")

    began = time.monotonic()
    previous_pod = agent.apply(Overlay(work / "previous-overlay", old / "node-dra-state", agent_images.repository))
    node.timings[f"previous release {release.version} deployed (pull and rollout)"] = time.monotonic() - began
    node.timings[f"image {agent_images.previous} pulled"] = node.pulled_in(agent_images.previous) or 0.0
    with agent.reports() as reports:
        name = previous_pod["metadata"]["name"]
        previous_report = reports.until(
            f"a report of every pod by release {release.version}",
            lambda objects: (r := objects.get(node.name)) and set(verdicts(r)) == matrix.names() | {name} and
            all_match(r) and r["status"].get("claims") and r, stall=20 * INTERVAL, detail=agent.logs)
    plane.kubectl("apply", "-f", "-", input=json.dumps(WITNESS))
    plane.kubectl("patch", "nodeenforcementreports.kubectl-dra.io", "upgrade-witness", "--subresource=status",
                  "--type=merge", "-p", json.dumps(WITNESS_STATUS))
    witness = agent.kubectl_json("get", "nodeenforcementreports.kubectl-dra.io", "upgrade-witness")

    with agent.reports() as reports:
        began = time.monotonic()
        current_pod = agent.apply(Overlay(work / "overlay", ROOT / "manifests" / "node-dra-state",
                                          agent_images.repository))
        node.timings["upgrade to this checkout (pull and rollout)"] = time.monotonic() - began
        node.timings[f"image {agent_images.current} pulled"] = node.pulled_in(agent_images.current) or 0.0
        name = current_pod["metadata"]["name"]
        reports.until("a report of every pod by this checkout's agent",
                      lambda objects: (r := objects.get(node.name)) and
                      r["status"].get("agentVersion") == __version__ and
                      set(verdicts(r)) == matrix.names() | {name} and r, stall=20 * INTERVAL, detail=agent.logs)
        versions = list(reports.versions)
    yield Deployment(agent, previous_pod, current_pod, previous_report, versions, witness)
    plane.kubectl("delete", "daemonset", "-n", "kubectl-dra-system", "dra-node-agent", "--cascade=foreground",
                  "--wait=true", "--timeout=300s", check=False)
