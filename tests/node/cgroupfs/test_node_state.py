"""The node-side readers against the real producers, on the cgroupfs node: the real kubelet's
dra_manager_state and cpu_manager_state, the real PodResources socket (the oracle that our own gRPC
test server, tests/podresources_server.py, stood in for), and the CDI specs the real driver wrote.
Each is checked against the API server's view of the same claims and pods."""

from __future__ import annotations

import json

from realnode import CDI_DIR, DRIVER, KUBELET_ROOT

import matrix

from kubectl_dra.cgroups.cpumanager import parse_cpu_manager_state, parse_cpuset
from kubectl_dra.nodestate.cdi import build_index, parse_spec
from kubectl_dra.nodestate.checkpoint import parse_dra_checkpoint


def api_claims(booted) -> dict[str, dict]:
    """The matrix's ResourceClaims as the API server has them, by name."""
    items = json.loads(booted.plane.kubectl("get", "resourceclaims", "-n", "matrix", "-o", "json").stdout)["items"]
    return {c["metadata"]["name"]: c for c in items}


def test_the_dra_checkpoint_is_read_as_the_real_kubelet_wrote_it(cgroupfs_node):
    path = f"{KUBELET_ROOT}/dra_manager_state"
    raw = cgroupfs_node.node.vm.read(path)[path]
    assert '\\"ClaimInfoStateList\\"' in raw  # the list key a released kubelet writes (docs/kubernetes/node-state.md §10)
    checkpoint = parse_dra_checkpoint(raw.encode())  # raises on a checksum mismatch: CRC-32 of Data
    claims = api_claims(cgroupfs_node)
    assert {c.name for c in checkpoint.claims} == set(claims) and len(claims) == matrix.CLAIMS
    pods = {p["metadata"]["uid"]: name for name, p in cgroupfs_node.pods.items()}
    for prepared in checkpoint.claims:
        api = claims[prepared.name]
        assert prepared.uid == api["metadata"]["uid"] and prepared.namespace == "matrix"
        assert prepared.pod_uids == {r["uid"] for r in api["status"]["reservedFor"]}
        assert all(uid in pods for uid in prepared.pod_uids)
        results = api["status"]["allocation"]["devices"]["results"]
        assert sorted(d.key for d in prepared.devices) == sorted(f"{r['driver']}/{r['pool']}/{r['device']}"
                                                                  for r in results)
        requests = {f"{r['driver']}/{r['pool']}/{r['device']}": r["request"] for r in results}
        for device in prepared.devices:
            request = requests[device.key]  # "dev" from a template; the scheduler's own name for extended resources
            assert device.request_names == (request,) and device.share_id is None
            # the test driver's CDI naming: <driver>/test=claim-<claim UID>-<request>
            assert device.cdi_ids == (f"{DRIVER}/test=claim-{prepared.uid}-{request}",)
    extended = cgroupfs_node.pods["dra-extended"]["status"]["extendedResourceClaimStatus"]
    assert extended["resourceClaimName"] in {c.name for c in checkpoint.claims}


def test_the_cpu_manager_state_is_read_as_the_real_kubelet_wrote_it(cgroupfs_node):
    node, pod = cgroupfs_node.node, cgroupfs_node.pods["exclusive"]
    path = f"{KUBELET_ROOT}/cpu_manager_state"
    raw = node.vm.read(path)[path]
    state = parse_cpu_manager_state(raw)
    assert state.policy_name == "static"
    assert state.form == ("data" if '"data"' in raw else "legacy")
    ids = {s["name"]: s["containerID"].split("//")[1] for s in pod["status"]["containerStatuses"]}
    base = f"kubepods/pod{pod['metadata']['uid']}"
    pinned = node.cgroup_files(f"{base}/{ids['pinned']}", ["cpuset.cpus"])["cpuset.cpus"]
    shared = node.cgroup_files(f"{base}/{ids['shared']}", ["cpuset.cpus"])["cpuset.cpus"]
    assert state.exclusive(pod["metadata"]["uid"]) == {"pinned": pinned}
    assert parse_cpuset(state.default_cpu_set) == parse_cpuset(shared)
    others = [p["metadata"]["uid"] for name, p in cgroupfs_node.pods.items() if name != "exclusive"]
    assert not any(state.exclusive(uid) for uid in others)  # fractional or non-Guaranteed: shared pool


def test_the_pod_resources_client_against_the_real_kubelet_socket(cgroupfs_node):
    """Our gRPC client (node_agent.podresources) inside the node, on the kubelet's own socket."""
    from vm import ROOT

    code = ("import json; from node_agent.podresources import list_pod_resources; "
            f"v = list_pod_resources('{KUBELET_ROOT}/pod-resources/kubelet.sock', 60); "
            "print(json.dumps({'pods': sorted(v.pods), 'rows': [[r.pod_name, r.container, r.claim_name, "
            "r.device_key, list(r.cdi_ids), r.share_id] for r in v.rows]}))")
    result = cgroupfs_node.node.vm.run(str(ROOT / ".venv" / "bin" / "python"), "-c", code, timeout=300,
                                       env={"PYTHONDONTWRITEBYTECODE": "1"})
    view = json.loads(result["stdout"])
    assert {tuple(p) for p in view["pods"]} >= {("matrix", name) for name in cgroupfs_node.pods}
    claims = api_claims(cgroupfs_node)
    expected = set()
    for name, pod in cgroupfs_node.pods.items():
        by_pod_claim = {s["name"]: s["resourceClaimName"] for s in pod["status"].get("resourceClaimStatuses", [])}
        extended = pod["status"].get("extendedResourceClaimStatus")
        for container in pod["spec"]["containers"]:
            used = [by_pod_claim[ref["name"]] for ref in container.get("resources", {}).get("claims", [])]
            # the claim the scheduler made: every container with a mapping sees all of its devices
            if extended and any(m["containerName"] == container["name"] for m in extended["requestMappings"]):
                used.append(extended["resourceClaimName"])
            for claim in (claims[n] for n in used):
                for r in claim["status"]["allocation"]["devices"]["results"]:
                    expected.add((name, container["name"], claim["metadata"]["name"],
                                  f"{r['driver']}/{r['pool']}/{r['device']}",
                                  (f"{DRIVER}/test=claim-{claim['metadata']['uid']}-{r['request']}",), None))
    assert {(p, c, n, d, tuple(ids), s) for p, c, n, d, ids, s in view["rows"]} == expected
    # dra-mapped 1, dra-shared 2 containers, dra-two-claims main 2 + side 1, dra-extended 1
    assert len(expected) == 7


def test_the_cdi_specs_the_real_driver_wrote_resolve_every_prepared_device(cgroupfs_node):
    node = cgroupfs_node.node
    names = node.vm.run("ls", CDI_DIR)["stdout"].split()
    texts = node.vm.read(*[f"{CDI_DIR}/{n}" for n in names])
    index = build_index(("/etc/cdi", CDI_DIR), [(1, path, text) for path, text in sorted(texts.items())])
    assert index.errors == {} and index.conflicts == {}
    for text in texts.values():
        kind, devices = parse_spec(text)
        assert kind == f"{DRIVER}/test" and len(devices) == 1
    path = f"{KUBELET_ROOT}/dra_manager_state"
    checkpoint = parse_dra_checkpoint(node.vm.read(path)[path].encode())
    wanted = [i for c in checkpoint.claims for d in c.devices for i in d.cdi_ids]
    assert len(wanted) == matrix.CLAIMS and all(index.why_unresolved(i) is None for i in wanted)
    assert index.why_unresolved(f"{DRIVER}/test=claim-00000000-0000-0000-0000-000000000000-dev") is not None
