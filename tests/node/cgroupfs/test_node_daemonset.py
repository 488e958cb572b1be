"""The agent as it ships, on the real cgroupfs node: its image pulled from a registry by the real
kubelet, deployed with ``kubectl apply -k`` through an operator's kustomization (conftest.deployed:
the previous release first, then the upgrade to this checkout), under the manifests' securityContext,
on the pods' network, talking to the API server through the kubernetes Service like any in-cluster
client.

Then the faults agents meet on real nodes, each watched: every version of the report the API server
stores during the fault is read, and none may hold a false finding; where a component is down, the
agent's scans meanwhile are seen in its metrics and what they said in its /report. Recovery times go
into the tier's summary. The reboot is last: it restarts every pod.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone

from agentpod import INTERVAL, NAMESPACE, Overlay, all_match, false_findings, full, now, restart_count
from nodecheck import claim_findings, container_cgroup, diverged_on, divergences, planted_divergence, verdicts
from realnode import KUBELET_ROOT, TEST_IMAGE
from vm import NODE_BIN, ROOT
from waiting import until

import matrix
from kubectl_dra import __version__
from kubectl_dra.verify.report import NodeEnforcementReport

MI = 1 << 20
STALL = 20 * INTERVAL  # a report that does not change for this long while it should is stuck


def agent_name(deployed) -> str:
    return deployed.agent.pod()["metadata"]["name"]


# -- the upgrade and the agent as shipped -----------------------------------------------------------

def test_the_upgrade_from_the_previous_release(deployed, agent_images, dra):
    """The previous release's own image and manifests ran and reported; `kubectl apply -k` of this
    checkout's replaced them. Every report version written meanwhile is readable by this release and
    says what the node is (no verdict flaps); the report object stored under the previous CRD keeps
    its uid and status; the new pod runs the new image."""
    old = deployed.previous_pod["status"]["containerStatuses"][0]
    new = deployed.current_pod["status"]["containerStatuses"][0]
    assert old["imageID"].endswith(agent_images.previous_digest), old["imageID"]
    assert new["imageID"].endswith(agent_images.current_digest), new["imageID"]
    assert agent_images.previous_digest != agent_images.current_digest  # really different code
    previous = agent_images.previous_release.version
    # the previous release's own reports: 0.1.0 predates the field, later ones name themselves
    assert deployed.previous_report["status"].get("agentVersion") == (None if previous == "0.1.0" else previous)
    assert deployed.upgrade_versions, "no report version seen during the upgrade"
    for version in deployed.upgrade_versions:
        NodeEnforcementReport.model_validate(version)  # each version reads with this release's model
        assert all_match(version), (version["status"].get("agentVersion"), verdicts(version),
                                    claim_findings(version))
        assert matrix.names() <= set(verdicts(version))
    assert deployed.upgrade_versions[-1]["status"]["agentVersion"] == __version__
    witness = deployed.agent.kubectl_json("get", "nodeenforcementreports.kubectl-dra.io", "upgrade-witness")
    assert witness["metadata"]["uid"] == deployed.witness["metadata"]["uid"]
    assert witness["status"] == deployed.witness["status"]
    result = dra("verify", "--node", deployed.agent.node.name, "--kubeconfig", deployed.agent.booted.user_kubeconfig)
    assert result.exit_code == 0, result
    deployed.agent.plane.kubectl("delete", "nodeenforcementreports.kubectl-dra.io", "upgrade-witness")


def test_the_agent_runs_as_shipped_and_reports_every_pod_as_match(deployed, dra):
    """With the node-dra-state overlay: root (the checkpoint and the socket are root's) with every
    capability dropped and a read-only root filesystem, on the pods' network."""
    agent = deployed.agent
    pod = agent.pod(ready=True)
    spec, container = pod["spec"], pod["spec"]["containers"][0]
    assert spec["securityContext"]["runAsUser"] == 0 and container["securityContext"]["readOnlyRootFilesystem"]
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert not spec.get("hostNetwork") and pod["status"]["podIP"].startswith("10.88.")
    assert f"--interval={INTERVAL}" == container["args"][-1]  # the operator's patch, last: it wins
    assert restart_count(pod) == 0
    doc = agent.report()
    assert set(verdicts(doc)) == matrix.names() | {pod["metadata"]["name"]} and all_match(doc)
    assert {s["name"]: s["state"] for s in doc["status"]["sources"]} == {
        "draCheckpoint": "read", "cdi": "read", "podResources": "read"}
    assert len(doc["status"]["claims"]) == matrix.CLAIMS and doc["status"]["nodeOptions"]["cgroupDriver"] == "cgroupfs"
    # the CPU manager's policy from its checkpoint, in the same directory (components/kubelet-state)
    assert doc["status"]["nodeOptions"]["cpuManagerPolicy"] == "static"
    assert doc["status"]["nodeOptionsSource"]["cpuManagerPolicy"].startswith("/host/var/lib/kubelet/cpu_manager_state")
    # what the container sees of the kubelet's root: its checkpoints, and none of the pods' volumes or its keys
    procs = agent.node.vm.read(container_cgroup(pod, "agent") + "/cgroup.procs")
    seen = f"/proc/{next(iter(procs.values())).split()[0]}/root/host/var/lib/kubelet"
    ours, pods, pki, host_pods = [agent.node.shell(f"ls -A {path}")["stdout"].split()
                                  for path in (seen, f"{seen}/pods", f"{seen}/pki", "/var/lib/kubelet/pods")]
    assert {"dra_manager_state", "cpu_manager_state", "pods", "pki", "pod-resources"} <= set(ours)
    assert pods == [] and pki == [] and len(host_pods) >= len(matrix.names())
    result = dra("verify", "--node", agent.node.name, "--kubeconfig", agent.booted.user_kubeconfig, "-o", "json")
    assert result.exit_code == 0, result
    assert [i["status"]["agentVersion"] for i in result.json()["items"]] == [__version__]
    table = dra("verify", "--node", agent.node.name, "--kubeconfig", agent.booted.user_kubeconfig)
    pods = len(matrix.names()) + 1
    assert table.exit_code == 0 and f"1 node, {pods} pods: {pods} match" in table.stdout


# -- faults -----------------------------------------------------------------------------------------

def test_the_api_server_stopped(deployed):
    """The API server is killed while a container's memory.max is rewritten. The outage lasts until
    the agent has failed two scans (its watches broke; it lists again and that fails), seen in its
    metrics; meanwhile it keeps running and serves the newest report it could make. Once the API
    server answers, the divergence is published."""
    agent, plane = deployed.agent, deployed.agent.plane
    pod = agent.pod(ready=True)
    with agent.reports() as reports:
        reports.until("all Match before the outage", lambda o: all_match(o[agent.node.name]), stall=STALL)
        mark = agent.scans()
        stopped = now()
        plane.stop_apiserver()
        back = False
        try:
            with planted_divergence(agent.booted):
                until("two failed scans during the outage", lambda: agent.scans()[1] - mark[1] >= 2,
                      stall=10 * INTERVAL, every=0.5)
                served = json.loads(agent.http("/report"))
                agent.node.timings["api server back"] = plane.start_apiserver()
                back = True
                began = time.monotonic()
                reports.until("the divergence planted during the outage",
                              lambda o: diverged_on(o[agent.node.name]), stall=STALL)
                agent.node.timings["report after the outage"] = time.monotonic() - began
        finally:
            if not back:
                plane.start_apiserver()
        reports.until("all Match again", lambda o: all_match(o[agent.node.name]), stall=STALL)
        seen = list(reports.versions)
    # /report is the newest scan that could run: the last published one if every scan since failed
    # (a watch broke and the list failed), or a scan from the cached objects that saw the divergence
    # and could not publish it. Never a report observed after the rewrite that says all is well.
    assert diverged_on(served) or (all_match(served) and served["status"]["observedAt"] <= stopped), served
    assert false_findings([served], "burstable") == []
    after = agent.pod(ready=True)
    assert after["metadata"]["uid"] == pod["metadata"]["uid"] and restart_count(after) == restart_count(pod)
    assert false_findings(seen, "burstable") == []
    logs = agent.logs(200)
    assert "scan failed (keeping the last report)" in logs and "Traceback" not in logs


def exit_of(node, container_id: str) -> dict | None:
    """containerd's TaskExit event for a container (``ctr events``, run in the node): its exit status
    (protobuf's JSON leaves out a 0) and when it exited."""
    for line in (node.vm.logs / "ctr-events.log").read_text(errors="replace").splitlines():
        if "/tasks/exit" in line and container_id in line:
            event = json.loads(line[line.index("{"):])
            if event.get("container_id") == container_id or event.get("id") == container_id:
                return event
    return None


def kubelet_killed(node, pod_name: str) -> datetime | None:
    """When the kubelet sent SIGTERM to the agent's container (its "Killing container" line, klog's
    UTC clock of the node)."""
    for line in (node.vm.logs / "kubelet.log").read_text(errors="replace").splitlines():
        if "Killing container with a grace period" in line and pod_name in line and 'containerName="agent"' in line:
            match = re.match(r"I(\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)", line)
            if match:
                year = datetime.now(timezone.utc).year
                return datetime.strptime(f"{year}-{match[1]}-{match[2]} {match[3][:15]}",
                                         "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
    return None


def exited_at(event: dict) -> datetime:
    """The event's exit time: a protobuf Timestamp as JSON ({seconds, nanos}) or RFC 3339 text."""
    value = event["exited_at"]
    if isinstance(value, dict):
        return datetime.fromtimestamp(int(value.get("seconds", 0)) + int(value.get("nanos", 0)) / 1e9, timezone.utc)
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?", value)
    return datetime.strptime(match[1] + (match[2] or ".0")[:7], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc)


def test_the_agents_pod_deleted_exits_on_sigterm_and_its_successor_carries_on(deployed):
    """Delete the agent's pod under the real kubelet: the container gets SIGTERM and exits 0 well
    within its 5 s grace period (never the SIGKILL), leaving the report object whole. The
    DaemonSet's new pod finds the same divergence and publishes no second Event (Events are named
    after what they report)."""
    agent, node = deployed.agent, deployed.agent.node
    old = agent.pod(ready=True)
    container_id = old["status"]["containerStatuses"][0]["containerID"].split("//")[1]
    with planted_divergence(agent.booted), agent.reports() as reports:
        reports.until("the planted divergence", lambda o: diverged_on(o[node.name]), stall=STALL)
        # the Event follows the report's write
        events = until("the agent's Event about burstable", lambda: [
            e for e in agent.events(matrix.NAMESPACE) if e["regarding"]["name"] == "burstable"], stall=STALL)
        assert len(events) == 1 and events[0]["reason"] == "CgroupDivergence"
        last = reports.objects[node.name]
        written = len(reports.versions)
        node.vm.spawn("ctr-events", [str(NODE_BIN / "ctr"), "--address", "/run/containerd/containerd.sock",
                                     "-n", "k8s.io", "events"], env=node.env)
        try:
            began = time.monotonic()
            agent.plane.kubectl("delete", "pod", "-n", NAMESPACE, old["metadata"]["name"], "--wait=true")
            event = node.wait("the agent container's exit event", lambda: exit_of(node, container_id), stall=60)
        finally:
            node.vm.stop_daemon("ctr-events")
        new = agent.wait_rollout()
        node.timings["agent pod replaced"] = time.monotonic() - began
        killed = kubelet_killed(node, old["metadata"]["name"])
        assert killed is not None
        grace = (exited_at(event) - killed).total_seconds()
        deployed.agent.booted.measured["agent SIGTERM to exit (s)"] = grace
        assert event.get("exit_status", 0) == 0, event  # 143 or 137 would be a signal's death
        assert grace < 5, (killed, event)  # terminationGracePeriodSeconds: 5, SIGKILL after
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        doc = reports.until("the new pod's report", lambda o: (r := o[node.name]) and
                            new["metadata"]["name"] in verdicts(r) and r, stall=STALL)
        # every version from the old pod's last to the new pod's first is a whole report: no scan
        # that SIGTERM cut short was published
        for version in [last, *reports.versions[written:]]:
            report = NodeEnforcementReport.model_validate(version)
            assert report.status.summary.pods == len(report.status.pods)
            assert matrix.names() <= set(verdicts(version)) and diverged_on(version)
        assert doc["metadata"]["uid"] == last["metadata"]["uid"] and diverged_on(doc)
        again = [e for e in agent.events(matrix.NAMESPACE) if e["regarding"]["name"] == "burstable"]
        assert [e["metadata"]["name"] for e in again] == [events[0]["metadata"]["name"]]
    with agent.reports() as reports:
        reports.until("all Match again", lambda o: all_match(o[node.name]), stall=STALL)


def test_containerd_then_the_kubelet_restarted(deployed):
    """Containers outlive both (their shims stay). While each is down the agent keeps scanning (two
    scans seen in its metrics, what they said in its /report): without containerd nothing it reads
    changes; without the kubelet its PodResources socket does not answer, which the scans say of that
    source alone, and no pod or claim changes verdict. Nothing restarts and no version of the report
    holds a false finding. (An outage this short is not published: a changed report is written at
    most every 10 s, and the next scan has it back.)"""
    agent, node = deployed.agent, deployed.agent.node
    pod = agent.pod(ready=True)
    before = {p: restart_count(deployed.agent.booted.pods[p]) for p in deployed.agent.booted.pods}
    with agent.reports() as reports:
        began = time.monotonic()
        node.stop_containerd()
        try:
            during_containerd = agent.scanned_since(agent.scans(), 2)
        finally:
            node.start_containerd()
        node.timings["containerd outage (two scans)"] = time.monotonic() - began
        began = time.monotonic()
        node.stop_kubelet()
        try:
            during_kubelet = agent.scanned_since(agent.scans(), 2)
            readable = {k: v for k, v in agent.metrics().items() if k.startswith("dra_agent_node_source_readable")}
        finally:
            started = now()
            node.start_kubelet()
        node.wait_ready(since=started)
        node.timings["kubelet outage (two scans) and Ready again"] = time.monotonic() - began
        after = agent.scanned_since(agent.scans(), 2)
        reports.until("podResources read again", lambda o: all(
            s["state"] == "read" for s in o[node.name]["status"]["sources"]), stall=STALL)
        seen = list(reports.versions)
    for doc in (during_containerd, during_kubelet, after):
        assert all_match(doc), (verdicts(doc), claim_findings(doc))
        assert len(doc["status"]["claims"]) == matrix.CLAIMS
    assert {s["name"]: s["state"] for s in during_containerd["status"]["sources"]}["podResources"] == "read"
    sources = {s["name"]: s for s in during_kubelet["status"]["sources"]}
    assert (sources["podResources"]["state"], sources["draCheckpoint"]["state"], sources["cdi"]["state"]) == (
        "unreadable", "read", "read"), sources
    assert readable[f'dra_agent_node_source_readable{{node="{node.name}",source="podResources"}}'] == -1
    assert false_findings(seen) == []
    after_pod = agent.pod(ready=True)
    assert after_pod["metadata"]["uid"] == pod["metadata"]["uid"] and restart_count(after_pod) == restart_count(pod)
    deployed.agent.booted.refresh()
    assert {p: restart_count(deployed.agent.booted.pods[p]) for p in deployed.agent.booted.pods} == before


# -- the base manifests, then every opt-in check -------------------------------------------------------

def test_the_base_manifests_run_the_agent_as_non_root(deployed, agent_images, tmp_path):
    """`kubectl apply -k manifests/` as shipped: user 65532, no root; every pod still Match (the
    cgroup check needs no privilege). Then every opt-in check on, for what follows."""
    agent = deployed.agent
    try:
        pod = agent.apply(Overlay(tmp_path / "base", ROOT / "manifests", agent_images.repository))
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        assert pod["spec"]["securityContext"]["runAsUser"] == 65532
        with agent.reports() as reports:
            doc = reports.until("a report from the non-root agent",
                                lambda o: (r := o.get(agent.node.name)) and pod["metadata"]["name"] in verdicts(r) and r,
                                stall=STALL)
        assert all_match(doc) and all(s["state"] != "read" for s in doc["status"]["sources"])
    finally:
        agent.apply(full(tmp_path, agent_images))


# -- the network check ------------------------------------------------------------------------------

def network_objects() -> list[dict]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "net", "namespace": matrix.NAMESPACE},
           "spec": {"terminationGracePeriodSeconds": 0,
                    "resourceClaims": [{"name": "nic", "resourceClaimTemplateName": "network"}],
                    "containers": [{"name": "app", "image": TEST_IMAGE, "imagePullPolicy": "Never",
                                    "command": ["sleep", "86400"], "resources": {"claims": [{"name": "nic"}]}}]}}
    return [matrix.claim_template("network"), pod]


def test_the_network_check_component_finds_a_device_left_on_the_host(deployed, agent_images, tmp_path):
    """manifests/network-check: hostPID, root, SYS_ADMIN and SYS_PTRACE. A network device allocated
    to a pod (the driver's ``dra.net/ifName`` attribute, ``networkData`` in the claim's status, as
    dranet writes them) whose interface is still in the host's namespace is NetworkDeviceInHost;
    moved into the pod's namespace under its pod name, the pod is Match. The host's namespace is PID
    1's: the agent's own is its pod's."""
    agent, node = deployed.agent, deployed.agent.node
    agent.apply(full(tmp_path, agent_images))  # a no-op when the test before left it on
    host_if, pod_if = matrix.NETWORK_INTERFACE, "net1"
    node.shell(f"ip link add {host_if} type veth peer name {host_if}-peer")
    try:
        node.apply(network_objects())
        pod = node.wait_pods(matrix.NAMESPACE, ["net"])["net"]
        claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = agent.kubectl_json("get", "resourceclaim", "-n", matrix.NAMESPACE, claim_name)
        result = claim["status"]["allocation"]["devices"]["results"][0]
        status = {"status": {"devices": [{"driver": result["driver"], "pool": result["pool"], "device": result["device"],
                                          "networkData": {"interfaceName": pod_if}}]}}
        agent.plane.kubectl("patch", "resourceclaim", "-n", matrix.NAMESPACE, claim_name, "--subresource=status",
                            "--type=merge", "-p", json.dumps(status))
        with agent.reports() as reports:
            doc = reports.until("NetworkDeviceInHost for the pod net",
                                lambda o: verdicts(o[node.name]).get("net") == "Diverged" and o[node.name], stall=STALL)
            found = [d for p in doc["status"]["pods"] if p["name"] == "net" for d in p["divergences"]]
            assert [(d["cause"], d["file"]) for d in found] == [("NetworkDeviceInHost", f"netns:{pod_if}")]
            assert {n: v for n, v in verdicts(doc).items() if n != "net"} == dict.fromkeys(
                set(verdicts(doc)) - {"net"}, "Match")
            procs = node.vm.read(container_cgroup(pod, "app") + "/cgroup.procs")
            pid = next(iter(procs.values())).split()[0]
            node.shell(f"ip link set {host_if} netns {pid} name {pod_if}")  # what dranet does at sandbox start
            reports.until("the pod net Match", lambda o: verdicts(o[node.name]).get("net") == "Match", stall=STALL)
    finally:
        node.shell(f"ip link del {host_if}", check=False)
        agent.plane.kubectl("delete", "-f", "-", "--wait=true", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": network_objects()}), check=False)


# -- the reboot (last: it restarts every pod) ---------------------------------------------------------

def test_the_node_rebooted(deployed, agent_images, tmp_path):
    """Power cut after a sync, then boot: /var/lib (the checkpoint, containerd's images) is on the
    node's disk, /run (containers, CDI specs) is gone. The agent, with the node's DRA state, comes
    back with the kubelet, and no report version written during the start-up holds a false finding;
    the checkpoint still holds the node's claims and the report converges to Match."""
    agent, node = deployed.agent, deployed.agent.node
    agent.apply(full(tmp_path, agent_images))  # every check on (a no-op when already)
    with agent.reports() as reports:
        reports.until("all Match with the node's claims", lambda o: all_match(o[node.name]) and
                      len(o[node.name]["status"]["claims"]) == matrix.CLAIMS, stall=STALL)
        checkpoint = node.vm.read(f"{KUBELET_ROOT}/dra_manager_state")[f"{KUBELET_ROOT}/dra_manager_state"]
        uid = reports.objects[node.name]["metadata"]["uid"]
        began = time.monotonic()
        rebooted_at = now()
        timings = node.reboot()
        names = [p["metadata"]["name"] for p in matrix.pods()]
        node.timings.update({f"reboot: {k}": v for k, v in timings.items()})

        def restarted(pods: dict[str, dict]):
            fresh = [p for n, p in pods.items() if n in names and p["status"].get("phase") == "Running"
                     and all(s.get("ready") and s["state"].get("running", {}).get("startedAt", "") >= rebooted_at
                             for s in p["status"].get("containerStatuses", []))]
            return len(fresh) == len(names)

        from apiwatch import Watch

        with Watch(agent.plane, f"/api/v1/namespaces/{matrix.NAMESPACE}/pods") as pods:
            pods.until("every matrix pod running again after the reboot", restarted, stall=180)
        node.timings["reboot: pods running"] = time.monotonic() - began
        agent.wait_rollout()
        doc = reports.until("all Match after the reboot", lambda o: all_match(o[node.name]) and
                            o[node.name]["status"]["observedAt"] >= rebooted_at and o[node.name], stall=STALL)
        node.timings["reboot: report Match"] = time.monotonic() - began
        seen = list(reports.versions)
    deployed.agent.booted.refresh()
    after = node.vm.read(f"{KUBELET_ROOT}/dra_manager_state")[f"{KUBELET_ROOT}/dra_manager_state"]
    held = {c["ClaimUID"] for c in json.loads(json.loads(checkpoint)["Data"])["ClaimInfoStateList"]}
    assert len(held) == matrix.CLAIMS and held == {c["ClaimUID"] for c in json.loads(json.loads(after)["Data"])["ClaimInfoStateList"]}
    assert len(doc["status"]["claims"]) == matrix.CLAIMS
    assert doc["metadata"]["uid"] == uid
    assert false_findings(seen) == [], false_findings(seen)
    infos = {(f[1], f[2]) for d in seen for f in claim_findings(d) if f[2] == "info"}
    assert infos <= {("CDIDeviceMissing", "info")}, infos  # the start-up, said as what it is
    assert restart_count(agent.pod()) <= 1  # the reboot's own restart, no crash loop
