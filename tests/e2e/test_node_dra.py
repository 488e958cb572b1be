"""dra-node-agent scan: the node's DRA state (the kubelet's checkpoint written in its exact format, CDI
spec directories, a real PodResources gRPC server on a unix socket) against the API's claims. A
correct node has no finding; each realistic perturbation yields exactly its finding; a source that
is absent, unreadable or garbage is said and concluded from nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import grpc
import pytest
import yaml
from builders import claim, pod, reserved_group, reserved_pod, uid
from cgroup_tree import build_tree
from click.testing import CliRunner
from kubelet_files import claim_state, write_cdi_spec, write_checkpoint
from podresources_server import PodResourcesServer, pod_resources

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.model.registry import parse_object
from kubectl_dra.nodescan.nodedra import read_node_dra
from node_agent.__main__ import cli as agent_cli

NODE = "worker-1"
GPU = "gpu.example.com"


def running(p: dict) -> dict:
    p["status"]["containerStatuses"] = [{"name": c["name"], "ready": True, "restartCount": 0, "image": "x",
                                         "imageID": "x", "containerID": f"containerd://{uid(p['metadata']['name'] + c['name']).replace('-', '')}",
                                         "state": {"running": {"startedAt": "2026-11-20T08:01:00Z"}}}
                                        for c in p["spec"]["containers"]]
    return p


class Node:
    """One node: API objects (a snapshot), a cgroup tree that matches, a kubelet root, CDI dirs."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.trainer = running(pod("trainer", claims={"gpu": "gpu-a"}))
        self.worker_a = running(pod("worker-a", group="team"))
        self.worker_a["spec"]["resourceClaims"] = [{"name": "shared", "resourceClaimName": "team-gpus"}]
        self.worker_a["spec"]["containers"][0]["resources"]["claims"] = [{"name": "shared"}]
        self.gpu_a = claim("gpu-a", devices=[(GPU, NODE, "gpu-0")], node=NODE, reserved_for=[reserved_pod(self.trainer)])
        self.team = claim("team-gpus", devices=[(GPU, NODE, "gpu-1"), (GPU, NODE, "gpu-2")], node=NODE,
                          reserved_for=[reserved_group("team")])
        self.pods = [self.trainer, self.worker_a]
        self.claims = [self.gpu_a, self.team]
        self.kubelet = tmp / "var" / "lib" / "kubelet"
        self.cdi = (tmp / "etc" / "cdi", tmp / "var" / "run" / "cdi")
        self.states = [claim_state(self.gpu_a, [self.trainer["metadata"]["uid"]]),
                       claim_state(self.team, [self.worker_a["metadata"]["uid"]])]
        write_cdi_spec(self.cdi[1], "gpu.example.com-gpu.json", "example.com/gpu", ["gpu-0", "gpu-1", "gpu-2"])
        # pod name -> what its containers' cgroup.procs hold ("" none; absent: no file, as the tree
        # builder leaves it), or None: the pod's cgroup does not exist (a node just rebooted)
        self.processes: dict[str, str | None] = {}

    def write(self) -> list[str]:
        snap = self.tmp / "snap"
        snap.mkdir(exist_ok=True)
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": uid("node")}, "status": {}}
        (snap / "objects.yaml").write_text(yaml.safe_dump_all([node, *self.pods, *self.claims]))
        write_checkpoint(self.kubelet, self.states)
        sys_root = self.tmp / "sys"
        dirs = build_tree(sys_root, [parse_object(p) for p in self.pods], NodeOptions())
        for name, procs in self.processes.items():
            if procs is None:
                shutil.rmtree(dirs[(name, None)])
                continue
            (dirs[(name, None)] / "cgroup.procs").write_text("")  # a pod cgroup holds none itself
            for (pod_name, container), directory in dirs.items():
                if pod_name == name and container is not None:
                    (directory / "cgroup.procs").write_text(procs)
        return ["scan", "--once", "--snapshot", str(snap), "--node", NODE, "--cgroup-root", str(sys_root / "fs" / "cgroup"),
                "--kubelet-root", str(self.kubelet), "--cdi-dir", str(self.cdi[0]), "--cdi-dir", str(self.cdi[1])]

    def scan(self, *extra: str):
        result = CliRunner().invoke(agent_cli, [*self.write(), "-o", "json", *extra])
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        return result, json.loads(result.stdout)


def findings(doc: dict) -> list[tuple[str, str, str]]:
    return sorted((c["name"], f["code"], f["severity"]) for c in doc["status"]["claims"] for f in c["findings"])


def source(doc: dict, name: str) -> dict:
    return next(s for s in doc["status"]["sources"] if s["name"] == name)


@pytest.fixture
def node(tmp_path) -> Node:
    return Node(tmp_path)


def test_a_correct_node_has_no_finding_and_shows_what_the_kubelet_holds(node):
    result, doc = node.scan()
    assert result.exit_code == 0, result.output
    assert findings(doc) == []
    claims = {c["name"]: c for c in doc["status"]["claims"]}
    assert claims["gpu-a"]["prepared"] is True and claims["gpu-a"]["preparedFor"] == ["ml/trainer"]
    assert claims["gpu-a"]["devices"] == [f"{GPU}/{NODE}/gpu-0"]
    assert claims["gpu-a"]["cdiDevices"] == ["example.com/gpu=gpu-0"]
    assert claims["gpu-a"]["uid"] == node.gpu_a["metadata"]["uid"] and claims["gpu-a"]["api"] == "read"
    # reserved through its PodGroup, prepared for a member: no PreparedNotReserved
    assert claims["team-gpus"]["preparedFor"] == ["ml/worker-a"]
    assert [(s["name"], s["state"]) for s in doc["status"]["sources"]] == [
        ("draCheckpoint", "read"), ("cdi", "read"), ("podResources", "absent")]
    assert doc["status"]["summary"]["claims"] == 2 and doc["status"]["summary"]["claimFindings"] == 0


def test_a_spec_deleted_under_running_pods(node):
    """The pods' sandboxes run (a process in their cgroups, or cgroup.procs unread): the kubelet will
    not prepare the claims again, so the next container start fails."""
    (node.cdi[1] / "gpu.example.com-gpu.json").unlink()
    node.processes = {"trainer": "4242\n"}  # worker-a: no cgroup.procs read, taken as running
    result, doc = node.scan()
    assert result.exit_code == 1
    assert findings(doc) == [("gpu-a", "CDIDeviceMissing", "error"), ("team-gpus", "CDIDeviceMissing", "error"),
                             ("team-gpus", "CDIDeviceMissing", "error")]
    message = doc["status"]["claims"][0]["findings"][0]["message"]
    assert "example.com/gpu=gpu-0" in message and "CreateContainerError" in message


def test_a_spec_missing_while_no_sandbox_runs_as_after_a_reboot(node):
    """A reboot empties /var/run/cdi and every pod's cgroup; the kubelet prepares each claim again when
    it creates the sandbox after its own restart and the driver writes the spec then (a real v1.37.2
    kubelet and the e2e test driver, tests/node/cgroupfs/test_node_daemonset.py::test_the_node_rebooted). Until
    then the missing spec is info, not an error: no exit 1, no Event. A pod cgroup that exists with
    every cgroup.procs empty (a sandbox being torn down or not started yet) is the same."""
    (node.cdi[1] / "gpu.example.com-gpu.json").unlink()
    node.processes = {"trainer": "", "worker-a": ""}
    result, doc = node.scan()
    assert result.exit_code == 0, result.output
    assert findings(doc) == [("gpu-a", "CDIDeviceMissing", "info"), ("team-gpus", "CDIDeviceMissing", "info"),
                             ("team-gpus", "CDIDeviceMissing", "info")]
    message = doc["status"]["claims"][0]["findings"][0]["message"]
    assert "No pod of this claim has a running sandbox" in message and "NodePrepareResources" in message
    node.processes = {"trainer": None, "worker-a": "77\n"}  # worker-a's sandbox is back, its spec is not
    # (trainer's cgroup is gone: that pod is Unknown, CgroupMissing, whatever its claim says)
    result, doc = node.scan()
    assert result.exit_code != 0
    assert findings(doc) == [("gpu-a", "CDIDeviceMissing", "info"), ("team-gpus", "CDIDeviceMissing", "error"),
                             ("team-gpus", "CDIDeviceMissing", "error")]


def test_a_spec_in_etc_cdi_resolves_too_and_a_same_directory_duplicate_does_not(node):
    (node.cdi[1] / "gpu.example.com-gpu.json").unlink()
    write_cdi_spec(node.cdi[0], "a.json", "example.com/gpu", ["gpu-0", "gpu-1", "gpu-2"])
    _, doc = node.scan()
    assert findings(doc) == []
    write_cdi_spec(node.cdi[0], "b.yaml", "example.com/gpu", ["gpu-1"])  # JSON is YAML
    _, doc = node.scan()
    assert findings(doc) == [("team-gpus", "CDIDeviceMissing", "error")]
    assert "defined twice" in doc["status"]["claims"][1]["findings"][0]["message"]


def test_prepared_for_a_pod_the_claim_is_not_reserved_for(node):
    node.gpu_a["status"]["reservedFor"] = []  # deallocation began while the pod still runs
    result, doc = node.scan()
    assert result.exit_code == 1
    assert findings(doc) == [("gpu-a", "PreparedNotReserved", "error")]
    assert "ml/trainer" in doc["status"]["claims"][0]["findings"][0]["message"]


def test_prepared_claim_replaced_in_the_api(node):
    old = claim_state(node.gpu_a, [node.trainer["metadata"]["uid"]])
    old["ClaimUID"] = uid("old-claim")
    node.states[0] = old  # the node holds the old claim; the API's claim of that name is a new one
    _, doc = node.scan()
    assert findings(doc) == [("gpu-a", "PreparedNotReserved", "error"), ("gpu-a", "ReservedNotPrepared", "error")]
    assert "was replaced" in doc["status"]["claims"][0]["findings"][0]["message"]


def test_running_pod_whose_claim_the_kubelet_has_not_prepared(node):
    node.states = node.states[1:]  # kubelet state wiped and rebuilt without gpu-a
    result, doc = node.scan()
    assert result.exit_code == 1
    assert findings(doc) == [("gpu-a", "ReservedNotPrepared", "error")]
    assert doc["status"]["claims"][0]["prepared"] is False


def test_a_pod_that_is_not_running_yet_is_not_expected_to_be_prepared(node):
    node.trainer["status"] = {"phase": "Pending"}
    node.states = node.states[1:]
    _, doc = node.scan()
    assert findings(doc) == []


def test_prepared_for_a_pod_that_left_the_node(node):
    node.states.append(claim_state(claim("old-replica-gpu", devices=[(GPU, NODE, "gpu-3")]), [uid("gone-pod")],
                                   {"gpu-3": []}))
    result, doc = node.scan()
    assert result.exit_code == 1
    # the claim is gone from the API too: one finding, about the pod, not a second about the claim
    assert findings(doc) == [("old-replica-gpu", "PreparedForGonePod", "warning")]
    entry = next(c for c in doc["status"]["claims"] if c["name"] == "old-replica-gpu")
    assert entry["api"] == "missing" and entry["preparedFor"] == [uid("gone-pod")]


def _deleted(p: dict, seconds_ago: int) -> None:
    """The pod as a real v1.37.2 kubelet leaves it when unprepare fails: deletionTimestamp set (the end
    of its grace period), phase still Running, every container terminated."""
    from datetime import datetime, timedelta, timezone

    when = datetime.now(timezone.utc) - timedelta(seconds=seconds_ago)
    p["metadata"]["deletionTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    for status in p["status"]["containerStatuses"]:
        status["state"] = {"terminated": {"exitCode": 137, "reason": "Error"}}
        status["ready"] = False


def test_deleted_pod_whose_claim_the_kubelet_cannot_unprepare(node):
    """A pod deleted while the driver's kubelet plugin was down (a real kubelet: Terminating for as long
    as the plugin is away, "unprepare dynamic resources: DRA driver ... is not registered")."""
    _deleted(node.trainer, seconds_ago=120)
    result, doc = node.scan()
    assert result.exit_code == 1
    assert findings(doc) == [("gpu-a", "UnprepareBlocked", "error")]
    message = doc["status"]["claims"][0]["findings"][0]["message"]
    assert "ml/trainer" in message and "gpu.example.com is not registered" in message
    # deletionTimestamp holds whole seconds, so a scan a moment later may already count 121
    assert "120s after" in message or "121s after" in message


def test_a_pod_within_its_grace_period_or_still_running_is_not_blocked(node):
    _deleted(node.trainer, seconds_ago=5)  # the kubelet is unpreparing it right now
    _, doc = node.scan()
    assert findings(doc) == []
    _deleted(node.trainer, seconds_ago=600)
    node.trainer["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": "2026-11-20T08:01:00Z"}}
    _, doc = node.scan()  # a container still runs: the kubelet has not started to unprepare
    assert findings(doc) == []


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_corrupt_checkpoint_concludes_nothing_else(node, damage):
    node.trainer["status"]["phase"] = "Running"
    node.states = []  # would be ReservedNotPrepared twice if the file were trusted
    args = node.write()
    path = node.kubelet / "dra_manager_state"
    blob = path.read_bytes()
    path.write_bytes({"flip": blob.replace(b"DRACheckpoint", b"DRACheckpoinT"), "truncate": blob[: len(blob) // 2],
                      "garbage": b"\x00\x01 not json"}[damage])
    result = CliRunner().invoke(agent_cli, [*args, "-o", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    assert findings(doc) == [("gpu-a", "CheckpointCorrupt", "error"), ("team-gpus", "CheckpointCorrupt", "error")]
    assert source(doc, "draCheckpoint")["state"] == "corrupt"
    assert "corrupt" in result.stderr and str(path) in result.stderr


def test_a_checkpoint_that_cannot_be_read_is_said_not_concluded(node):
    args = node.write()
    path = node.kubelet / "dra_manager_state"
    path.unlink()
    path.mkdir()  # EISDIR: unreadable as root too
    result = CliRunner().invoke(agent_cli, [*args, "-o", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 0  # the cgroups were checked and held; the claims could not be
    assert doc["status"]["claims"] == [] and source(doc, "draCheckpoint")["state"] == "unreadable"
    assert "warning:" in result.stderr and str(path) in result.stderr


def test_no_node_sources_means_no_claims_section(node):
    args = node.write()
    (node.kubelet / "dra_manager_state").unlink()
    result = CliRunner().invoke(agent_cli, [*args, "-o", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["status"]["claims"] == []
    assert source(doc, "draCheckpoint")["state"] == "absent"


def test_claims_the_api_cannot_answer_for_are_compared_with_nothing(node):
    node.claims = [node.team]  # gpu-a not in the snapshot: "missing", a definite answer
    _, doc = node.scan()
    entry = next(c for c in doc["status"]["claims"] if c["name"] == "gpu-a")
    assert entry["api"] == "missing"
    assert findings(doc) == [("gpu-a", "PreparedNotReserved", "error")]  # prepared for trainer, claim gone


def test_table_output_lists_claims_and_each_finding_in_words(node):
    node.gpu_a["status"]["reservedFor"] = []
    result = CliRunner().invoke(agent_cli, node.write())
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("NAMESPACE") and "PREPARED" in line)
    assert header.split() == ["NAMESPACE", "CLAIM", "PREPARED", "FINDINGS"]  # node, holders, devices: -o wide
    assert any(line.split() == ["ml", "gpu-a", "true", "PreparedNotReserved"] for line in lines)
    wide = CliRunner().invoke(agent_cli, [*node.write(), "-o", "wide"]).stdout.splitlines()
    assert any(line.split()[:5] == [NODE, "ml", "gpu-a", "true", "ml/trainer"] and "PreparedNotReserved" in line.split()
               for line in wide)
    assert any(line.startswith(f"{NODE} ml/gpu-a: PreparedNotReserved (error): ") for line in lines)
    assert "2 claims compared with the node: 1 finding" in result.stdout


# -- PodResources over a real unix socket -------------------------------------------------------

def serve(node: Node, pods: list, fail=None) -> PodResourcesServer:
    sock = node.kubelet / "pod-resources" / "kubelet.sock"
    sock.parent.mkdir(parents=True, exist_ok=True)
    return PodResourcesServer(str(sock), pods, fail)


def trainer_row(node: Node, device="gpu-0", claim_name="gpu-a"):
    return pod_resources("ml", "trainer", {"main": [{"claim": claim_name, "driver": GPU, "pool": NODE, "device": device,
                                                      "cdi": [f"example.com/gpu={device}"]}]})


def test_pod_resources_agrees_with_the_checkpoint(node):
    with serve(node, [trainer_row(node)]) as server:
        result, doc = node.scan()
    assert server.lister.calls == 1
    assert result.exit_code == 0 and findings(doc) == []
    assert source(doc, "podResources")["state"] == "read"
    gpu_a = doc["status"]["claims"][0]
    assert gpu_a["sources"] == ["checkpoint", "podResources"]


def test_pod_resources_alone_finds_an_unreserved_claim_and_a_missing_cdi_spec(node):
    (node.cdi[1] / "gpu.example.com-gpu.json").unlink()
    write_cdi_spec(node.cdi[1], "gpu.json", "example.com/gpu", ["gpu-1", "gpu-2"])
    node.gpu_a["status"]["reservedFor"] = []
    args = node.write()
    (node.kubelet / "dra_manager_state").unlink()
    with serve(node, [trainer_row(node)]):
        result = CliRunner().invoke(agent_cli, [*args, "-o", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    assert findings(doc) == [("gpu-a", "CDIDeviceMissing", "error"), ("gpu-a", "PreparedNotReserved", "error")]
    (unreserved,) = [f for f in doc["status"]["claims"][0]["findings"] if f["code"] == "PreparedNotReserved"]
    assert "PodResources API holds this claim" in unreserved["message"]


def test_pod_resources_alone_finds_a_container_without_its_claim(node):
    args = node.write()
    (node.kubelet / "dra_manager_state").unlink()
    # the kubelet reports DRA devices (worker-a's) but none for trainer's running container
    team = pod_resources("ml", "worker-a", {"main": [{"claim": "team-gpus", "driver": GPU, "pool": NODE, "device": "gpu-1"}]})
    with serve(node, [team, pod_resources("ml", "trainer", {"main": []})]):
        result = CliRunner().invoke(agent_cli, [*args, "-o", "json"])
    doc = json.loads(result.stdout)
    assert findings(doc) == [("gpu-a", "ReservedNotPrepared", "error")]
    # a kubelet that fills no dynamic_resources at all (gate off) proves nothing
    with serve(node, [pod_resources("ml", "worker-a", {"main": []}), pod_resources("ml", "trainer", {"main": []})]):
        result = CliRunner().invoke(agent_cli, [*args, "-o", "json"])
    assert findings(json.loads(result.stdout)) == []


def test_a_failing_or_garbage_socket_is_said_and_the_scan_goes_on(node, monkeypatch):
    monkeypatch.setattr("kubectl_dra.nodescan.nodedra.POD_RESOURCES_TIMEOUT", 1.0)
    with serve(node, [], fail=(grpc.StatusCode.UNAVAILABLE, "kubelet is restarting")):
        result, doc = node.scan()
    assert result.exit_code == 0 and findings(doc) == []  # the checkpoint still answered
    pr = source(doc, "podResources")
    assert pr["state"] == "unreadable" and "UNAVAILABLE" in pr["message"] and "kubelet is restarting" in pr["message"]
    assert "warning:" in result.stderr
    # a socket that speaks no gRPC at all
    sock_path = node.kubelet / "pod-resources" / "kubelet.sock"
    sock_path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_path))
    listener.listen(1)
    try:
        result = CliRunner().invoke(agent_cli, [*node.write(), "-o", "json"])
    finally:
        listener.close()
    doc = json.loads(result.stdout)
    assert source(doc, "podResources")["state"] == "unreadable"
    # a regular file where the socket should be
    sock_path.unlink()
    sock_path.write_text("not a socket")
    result, doc = node.scan()
    assert source(doc, "podResources") == {"name": "podResources", "path": str(sock_path), "state": "unreadable",
                                           "message": "not a unix socket"}


def test_unreadable_cdi_directory_is_said(node):
    args = node.write()
    node.cdi[1].chmod(0)
    try:
        if os.access(node.cdi[1], os.R_OK):  # root reads anything: make the directory a file instead
            node.cdi[1].chmod(0o755)
            for f in node.cdi[1].iterdir():
                f.unlink()
            node.cdi[1].rmdir()
            node.cdi[1].write_text("")
        result = CliRunner().invoke(agent_cli, [*args, "-o", "json"])
    finally:
        if node.cdi[1].is_dir():
            node.cdi[1].chmod(0o755)
    doc = json.loads(result.stdout)
    assert source(doc, "cdi")["state"] == "unreadable"
    assert findings(doc) == []  # CDI IDs are not called missing when the directory could not be read


# -- the example node: checkpoint, CDI specs and a PodResources socket --------------------------

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"


@pytest.fixture
def short_tmp():
    """A unix socket path holds at most 107 bytes: pytest's tmp_path can be longer."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="dra-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_scan_once_on_the_example_node_shows_each_finding(short_tmp):
    import shutil

    from kubectl_dra.kube.snapshot import load_snapshot
    from kubectl_dra.verify.crosscheck import pods_on

    tree = short_tmp / "worker-gpu-1"
    shutil.copytree(ROOT / "examples" / "nodes" / "worker-gpu-1", tree)
    pods = {p.name: p for p in pods_on(load_snapshot(EXAMPLE), "worker-gpu-1")}
    (tree / "var/lib/kubelet/pod-resources").mkdir()
    # the kubelet's PodResources: what the running containers hold (the embedder's two containers
    # share one GPU); it agrees with the checkpoint, so it adds no finding of its own
    embedder = pod_resources("ml", "embedder", {c: [{"claim": "embedder-gpu-qfx82", "driver": GPU, "pool": "worker-gpu-1",
                                                     "device": "gpu-3"}] for c in ("encoder", "reranker")})
    args = ["scan", "--once", "--snapshot", str(EXAMPLE), "--node", "worker-gpu-1",
            "--cgroup-root", str(tree / "sys/fs/cgroup"), "--kubelet-root", str(tree / "var/lib/kubelet"),
            "--cdi-dir", str(tree / "etc/cdi"), "--cdi-dir", str(tree / "var/run/cdi"), "-o", "json"]
    with PodResourcesServer(str(tree / "var/lib/kubelet/pod-resources/kubelet.sock"), [embedder]) as server:
        result = CliRunner().invoke(agent_cli, args)
    assert server.lister.calls == 1 and result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert [(s["name"], s["state"]) for s in doc["status"]["sources"]] == [
        ("draCheckpoint", "read"), ("cdi", "read"), ("podResources", "read")]
    assert findings(doc) == [
        ("ingest-gateway-nic-v2tc9", "PreparedNotReserved", "error"),
        ("ingest-gateway-nic-v2tc9", "ReservedNotPrepared", "error"),
        ("llm-inference-7c9d8b6f5d-q8wzt-gpu-7xk2m", "PreparedForGonePod", "warning"),
        ("trainer-gpus-hd295", "CDIDeviceMissing", "error"), ("trainer-gpus-hd295", "CDIDeviceMissing", "error")]
    embedder_claim = next(c for c in doc["status"]["claims"] if c["name"] == "embedder-gpu-qfx82")
    assert embedder_claim["sources"] == ["checkpoint", "podResources"]
    assert embedder_claim["preparedFor"] == [f"ml/{pods['embedder'].name}"]
    # the same node with its checkpoint damaged: CheckpointCorrupt on each claim, nothing else from it
    checkpoint = tree / "var/lib/kubelet/dra_manager_state"
    checkpoint.write_bytes(checkpoint.read_bytes()[:-20])
    result = CliRunner().invoke(agent_cli, args)
    doc = json.loads(result.stdout)
    assert {code for _, code, _ in findings(doc)} == {"CheckpointCorrupt"}
    assert len(findings(doc)) == 4 and result.exit_code == 1  # one per claim the node's pods use


def test_the_committed_example_report_is_what_a_scan_of_the_example_node_says():
    """examples/cluster/reports/worker-gpu-1.yaml holds the claims section the example node yields."""
    report = yaml.safe_load((EXAMPLE / "reports" / "worker-gpu-1.yaml").read_text())
    assert sorted((c["name"], f["code"]) for c in report["status"]["claims"] for f in c["findings"]) == [
        ("ingest-gateway-nic-v2tc9", "PreparedNotReserved"), ("ingest-gateway-nic-v2tc9", "ReservedNotPrepared"),
        ("llm-inference-7c9d8b6f5d-q8wzt-gpu-7xk2m", "PreparedForGonePod"),
        ("trainer-gpus-hd295", "CDIDeviceMissing"), ("trainer-gpus-hd295", "CDIDeviceMissing")]


def test_explain_claim_shows_the_nodes_view_from_the_report(dra):
    result = dra("explain", "claim", "ingest-gateway-nic-v2tc9", "-n", "ml", "--snapshot", str(EXAMPLE), "-o", "json")
    doc = result.json()
    assert doc["nodeView"] == [{"node": "worker-gpu-1", "observedAt": "2026-11-20T09:35:00Z", "prepared": False,
                                "preparedFor": ["ml/ingest-gateway"], "devices": ["dra.net/worker-gpu-1/pci-0000-20-00-0"],
                                "cdiDevices": [], "sources": ["checkpoint"]}]
    codes = [f["code"] for f in doc["findings"] if f["message"].startswith("on node worker-gpu-1")]
    assert codes == ["PreparedNotReserved", "ReservedNotPrepared"]
    text = dra("explain", "claim", "ingest-gateway-nic-v2tc9", "-n", "ml", "--snapshot", str(EXAMPLE)).stdout
    assert "On the node (the agent's report)" in text and "worker-gpu-1  NOT prepared for ml/ingest-gateway" in text
    # a claim no agent reports on has no node view
    assert dra("explain", "claim", "eval-gpu", "-n", "default", "--snapshot", str(EXAMPLE), "-o", "json").json()[
        "nodeView"] == []


@pytest.mark.kernel
def test_the_socket_answers_through_a_read_only_bind_mount(short_tmp):
    """The DaemonSet mounts the kubelet's pod-resources directory read-only: connecting to a unix
    socket needs write permission on the socket, not a writable mount (real kernel, as root)."""
    import subprocess

    from node_agent.podresources import list_pod_resources

    src, ro = short_tmp / "src", short_tmp / "ro"
    src.mkdir()
    ro.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True).returncode:
        pytest.skip("needs root and bind mounts")
    try:
        assert subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], capture_output=True).returncode == 0
        with PodResourcesServer(str(src / "kubelet.sock"), [pod_resources("ml", "p", {"c": [
                {"claim": "x", "driver": GPU, "pool": NODE, "device": "gpu-0"}]})]):
            view = list_pod_resources(str(ro / "kubelet.sock"), 3.0)
        assert view.pods == frozenset({("ml", "p")}) and view.rows[0].device_key == f"{GPU}/{NODE}/gpu-0"
        with pytest.raises(OSError, match="Read-only file system"):
            (ro / "probe").write_text("x")
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True)


@pytest.mark.kernel
def test_a_checkpoint_mounted_alone_goes_stale_when_the_kubelet_replaces_it_and_is_refused(node):
    """The kubelet writes its checkpoints to a temporary file and renames it over the old one
    (pkg/kubelet/util/store/filestore.go writeFile, v1.37.2). A bind mount of the file alone keeps
    the old inode: it still reads, with the old claims, and has no name left. Seen on the real node
    (tests/node: the 0.1.0 manifests mounted dra_manager_state alone and the agent reported claims the
    kubelet had long unprepared). The scan refuses such a file as unreadable, with what to mount
    instead, and concludes nothing from it (real kernel, as root)."""
    import subprocess

    node.write()
    kubelet = node.kubelet
    mounted = node.tmp / "mounted"
    mounted.mkdir()
    target = mounted / "dra_manager_state"
    target.write_text("")
    if os.geteuid() != 0 or subprocess.run(["mount", "--bind", str(kubelet / "dra_manager_state"), str(target)],
                                           capture_output=True).returncode:
        pytest.skip("needs root and bind mounts")
    try:
        before = node.scan("--kubelet-root", str(mounted))[1]
        assert next(s for s in before["status"]["sources"] if s["name"] == "draCheckpoint")["state"] == "read"
        fresh = kubelet / ".dra_manager_state.tmp"  # the kubelet's way: a new file renamed over the old
        fresh.write_bytes((kubelet / "dra_manager_state").read_bytes())
        os.rename(fresh, kubelet / "dra_manager_state")
        assert target.read_bytes() == (kubelet / "dra_manager_state").read_bytes()  # same content: still stale
        result, doc = node.scan("--kubelet-root", str(mounted))
        source = next(s for s in doc["status"]["sources"] if s["name"] == "draCheckpoint")
        assert source["state"] == "unreadable" and "replaced on the host since it was mounted" in source["message"]
        assert "manifests/components/kubelet-state" in source["message"]
        assert "CheckpointCorrupt" not in str(findings(doc)), result.output
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)


def test_a_grpc_client_that_cannot_load_leaves_the_socket_unreadable_and_the_rest_read(node, monkeypatch):
    """The first image lacked libstdc++, so importing grpc failed inside the scan and crash-looped the
    agent on the real node. Now that source is unreadable with the loader's words, the checkpoint
    and CDI specs are still read and compared, and nothing is concluded from the socket. The agent
    loads the client when it starts (node_agent/podresources), so the client is loaded afresh here
    with grpc unloadable, as in that image."""
    import sys

    with serve(node, [trainer_row(node)]) as server:
        monkeypatch.setitem(sys.modules, "grpc", None)  # import grpc raises ImportError
        for name in [m for m in sys.modules if m == "node_agent.once" or m.startswith("node_agent.podresources")]:
            monkeypatch.delitem(sys.modules, name)
        result, doc = node.scan()
    assert server.lister.calls == 0
    assert result.exit_code == 0 and findings(doc) == []
    state = source(doc, "podResources")
    assert state["state"] == "unreadable" and "gRPC client cannot be loaded" in state["message"]
    assert source(doc, "draCheckpoint")["state"] == "read" and source(doc, "cdi")["state"] == "read"


def test_no_cdi_directory_given_is_said_as_such_not_as_an_empty_path():
    cdi = [s for s in read_node_dra(None, cdi_dirs=()).sources if s.name == "cdi"]
    assert [(s.path, s.state, s.message) for s in cdi] == [("(none)", "absent", "no CDI spec directory given")]
