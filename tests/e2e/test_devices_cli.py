"""``kubectl dra devices`` as a user runs it: on the example snapshot, against the fake API server
(one list per kind, a kind that cannot be read, the named node or class missing), and its exit
codes (docs/contracts.md §3.6a). The counts themselves are checked against the real scheduler in
tests/cluster/test_devices_oracle.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster")
DEVICES = str(ROOT / "examples" / "devices")


def test_the_json_document_is_the_contract(dra):
    result = dra("devices", "--snapshot", DEVICES, "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    assert (doc["kind"], doc["apiVersion"]) == ("DeviceAvailability", "kubectl-dra.io/v1alpha1")
    rows = {r["node"]: r for r in doc["pools"]}
    partitioned = rows["gpu-node-1"]
    assert (partitioned["total"], partitioned["allocated"], partitioned["free"], partitioned["available"],
            partitioned["blocked"]) == (10, 2, 3, 6, 2)
    assert [(c["counter"], c["consumed"], c["remaining"]) for c in partitioned["counters"]] == [
        ("memory", "50Gi", "30Gi"), ("multiprocessors", "56", "42")]
    assert [(s["shape"], s["attribute"], s["devices"], s["fit"]) for s in partitioned["shapes"]] == [
        ("1g.10gb", "gpu.example.com/profile", 7, 3), ("3g.40gb", "gpu.example.com/profile", 2, 0),
        ("7g.80gb", "gpu.example.com/profile", 1, 0)]
    whole = rows["gpu-node-2"]
    assert (whole["allocated"], whole["free"], whole["tainted"], whole["admin"], whole["devices"]) == (2, 1, 1, 1, [])
    assert [f["code"] for f in doc["findings"]] == ["HeldByDeletedClaim"]


def test_devices_name_their_holders_and_states(dra):
    doc = dra("devices", "--snapshot", DEVICES, "--node", "gpu-node-2", "--devices", "-o", "yaml").stdout
    (row,) = yaml.safe_load(doc)["pools"]
    by_name = {d["device"].rsplit("/", 1)[1]: d for d in row["devices"]}
    assert {n: d["state"] for n, d in by_name.items()} == {
        "gpu-0": "Allocated", "gpu-1": "Allocated", "gpu-2": "Tainted", "gpu-3": "Free"}
    assert [(h["claim"], h["adminAccess"], h["pods"]) for h in by_name["gpu-0"]["holders"]] == [
        ("ml/infer", False, ["ml/infer-0"]), ("monitoring/dcgm-exporter", True, ["monitoring/dcgm-exporter-x7k2p"])]
    assert by_name["gpu-1"]["holders"][0]["deleting"] is True
    assert by_name["gpu-2"]["taints"] == ["gpu.example.com/ecc-errors=3:NoSchedule"]
    assert row["unhealthy"] == 0  # the pods were read (--devices): none reports a device Unhealthy


@pytest.mark.parametrize("args,rows", [
    (["--free"], ["gpu-node-1", "gpu-node-2"]),
    (["--class", "gpu-1g"], ["gpu-node-1"]),  # the whole GPUs are no 1g partition
    (["-l", "gpu=whole"], ["gpu-node-2"]),
    (["--pool", "gpu-node-1"], ["gpu-node-1"]),
    (["--driver", "dra.net"], []),
])
def test_filters(args, rows, dra):
    result = dra("devices", "--snapshot", DEVICES, "-o", "json", *args)
    assert result.exit_code == 0, result
    assert [r["node"] for r in result.json()["pools"]] == rows


def test_free_devices_only(dra):
    result = dra("devices", "--snapshot", EXAMPLE, "--free", "--devices", "--driver", "gpu.example.com", "-o", "json")
    assert [d["device"] for r in result.json()["pools"] for d in r["devices"]] == ["gpu.example.com/worker-gpu-2/gpu-2"]


@pytest.mark.parametrize("args,message", [
    (["--class", "nope"], 'error: deviceclasses.resource.k8s.io "nope" not found'),
    (["--node", "nope"], 'error: nodes "nope" not found'),
])
def test_a_named_object_that_does_not_exist_is_exit_3(args, message, dra):
    result = dra("devices", "--snapshot", EXAMPLE, *args)
    assert (result.exit_code, result.stdout, result.stderr.strip()) == (3, "", message)


def test_a_bad_selector_is_a_usage_error(dra):
    result = dra("devices", "--snapshot", EXAMPLE, "-l", "a in (")
    assert result.exit_code == 2 and "Invalid value for '-l' / '--selector'" in result.stderr


def test_an_unknown_count_is_exit_4_with_the_reason(dra, tmp_path):
    """A class whose selector fails on some devices: the scheduler errors there, so how many a
    request gets depends on the order it meets them; the count is not given."""
    bad = tmp_path / "class.yaml"
    bad.write_text(yaml.safe_dump({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                   "metadata": {"name": "by-profile"}, "spec": {"selectors": [{"cel": {
                                       "expression": 'device.attributes["gpu.example.com"].profile == "1g.10gb"'}}]}}))
    (tmp_path / "cluster.yaml").write_text((Path(DEVICES) / "cluster.yaml").read_text())
    result = dra("devices", "--snapshot", str(tmp_path), "--class", "by-profile")
    assert result.exit_code == 4, result
    assert "<unknown>" in result.stdout
    assert "gpu-node-2 gpu.example.com/gpu-node-2: free not known: device gpu-0: the scheduler fails on this device" \
        in " ".join(result.stdout.split())


def test_one_list_per_kind_and_claims_forbidden_is_nothing_to_show(make_apiserver, kubeconfig_for, dra):
    from builders import small_cluster

    server = make_apiserver(small_cluster())
    kubeconfig = str(kubeconfig_for(server))
    result = dra("devices", "--kubeconfig", kubeconfig, "-o", "json")
    assert result.exit_code == 0, result
    lists = sorted(r.resource for r in server.requests if r.method == "GET" and r.route and r.route.name is None
                   and r.resource)  # not the discovery of a group version
    assert lists == ["deviceclasses", "devicetaintrules", "nodes", "resourceclaims", "resourceslices"], lists
    server.fail(403, resource="resourceclaims")
    refused = dra("devices", "--kubeconfig", kubeconfig)
    assert refused.exit_code == 3 and refused.stdout == ""
    assert "nothing to show: ResourceClaim objects could not be read" in refused.stderr
