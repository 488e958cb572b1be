"""The kubelet's DRA checkpoint: the kubelet's own test vectors (pkg/kubelet/cm/dra/state,
checkpointer_test.go @ v1.37.2) and the ways a real file goes wrong."""

from __future__ import annotations

import binascii
import json

import pytest
from kubelet_files import checkpoint_bytes, claim_state
from builders import claim, uid

from kubectl_dra.nodestate.checkpoint import CheckpointError, parse_dra_checkpoint

CLAIM_UID, POD_UID = "067798be-454e-4be4-9047-1aa06aea63f7", "139cdb46-f989-4f17-9561-ca10cfb509a6"
PREFIX = '{\\"kind\\":\\"DRACheckpoint\\",\\"apiVersion\\":\\"checkpoint.dra.kubelet.k8s.io/v1\\",'


def upstream(entries: str, checksum: int, prefix: str = PREFIX) -> bytes:
    return ('{"Data":"' + prefix + entries + '}","Checksum":' + str(checksum) + '}').encode()


ONE = ('\\"ClaimInfoStateList\\":[{\\"ClaimUID\\":\\"067798be-454e-4be4-9047-1aa06aea63f7\\",\\"ClaimName\\":\\"example\\",'
       '\\"Namespace\\":\\"default\\",\\"PodUIDs\\":{\\"139cdb46-f989-4f17-9561-ca10cfb509a6\\":{}},\\"DriverState\\":'
       '{\\"test-driver.cdi.k8s.io\\":{\\"Devices\\":[{\\"PoolName\\":\\"worker-1\\",\\"DeviceName\\":\\"dev-1\\",'
       '\\"ShareID\\":null,\\"RequestNames\\":[\\"test request\\"],\\"CDIDeviceIDs\\":[\\"example.com/example=cdi-example\\"]}]}}}]')
SHARED = ONE.replace('\\"ShareID\\":null', '\\"ShareID\\":\\"aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa\\"')
TWO_DEVICES = ONE.replace(']}]}}}]', ']},{\\"PoolName\\":\\"worker-1\\",\\"DeviceName\\":\\"dev-2\\",\\"ShareID\\":null,'
                          '\\"RequestNames\\":[\\"test request\\"],\\"CDIDeviceIDs\\":[\\"example.com/example=cdi-example\\"]}]}}}]')
TWO_CLAIMS = ('\\"ClaimInfoStateList\\":[{\\"ClaimUID\\":\\"067798be-454e-4be4-9047-1aa06aea63f7\\",\\"ClaimName\\":\\"example-1\\",'
              '\\"Namespace\\":\\"default\\",\\"PodUIDs\\":{\\"139cdb46-f989-4f17-9561-ca10cfb509a6\\":{}},\\"DriverState\\":'
              '{\\"test-driver.cdi.k8s.io\\":{\\"Devices\\":[{\\"PoolName\\":\\"worker-1\\",\\"DeviceName\\":\\"dev-1\\",'
              '\\"ShareID\\":null,\\"RequestNames\\":[\\"test request\\"],\\"CDIDeviceIDs\\":[\\"example.com/example=cdi-example\\"]}]}}},'
              '{\\"ClaimUID\\":\\"4cf8db2d-06c0-7d70-1a51-e59b25b2c16c\\",\\"ClaimName\\":\\"example-2\\",\\"Namespace\\":\\"default\\",'
              '\\"PodUIDs\\":{\\"139cdb46-f989-4f17-9561-ca10cfb509a6\\":{}},\\"DriverState\\":{\\"test-driver.cdi.k8s.io\\":'
              '{\\"Devices\\":[{\\"PoolName\\":\\"worker-1\\",\\"DeviceName\\":\\"dev-2\\",\\"ShareID\\":null,\\"RequestNames\\":null,'
              '\\"CDIDeviceIDs\\":null}]}}}]')
ENTRIES_BAD_SUM = TWO_CLAIMS.replace("ClaimInfoStateList", "Entries").replace('\\"ShareID\\":null,', "")
NO_REQUEST_NAMES = ONE.replace('\\"ShareID\\":null,\\"RequestNames\\":[\\"test request\\"],', "")


@pytest.mark.parametrize("blob, checksum_ok, claims", [
    (upstream(ONE, 2570581864), True, [("example", ("dev-1",), None, ("test request",))]),
    (upstream(SHARED, 736302156), True, [("example", ("dev-1",), "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa", ("test request",))]),
    (upstream(TWO_DEVICES, 1223221469), True, [("example", ("dev-1", "dev-2"), None, ("test request",))]),
    (upstream(TWO_CLAIMS, 2820117767), True, [("example-1", ("dev-1",), None, ("test request",)),
                                              ("example-2", ("dev-2",), None, ())]),
    (upstream(NO_REQUEST_NAMES, 1137250765), True, [("example", ("dev-1",), None, ())]),  # "upgraded-structure"
    (upstream(NO_REQUEST_NAMES, 1284376732, PREFIX.replace("/v1", "/v0")), True,  # "upgraded-structure-and-version"
     [("example", ("dev-1",), None, ())]),
], ids=["one-device", "share-id", "two-devices", "two-claims", "upgraded-structure", "upgraded-structure-and-version"])
def test_the_kubelets_own_vectors_load(blob, checksum_ok, claims):
    # the vectors' checksums are CRC-32/IEEE of Data, computed here apart from the code under test
    envelope = json.loads(blob)
    assert binascii.crc32(envelope["Data"].encode()) == envelope["Checksum"]
    checkpoint = parse_dra_checkpoint(blob)
    got = [(c.name, tuple(d.device for d in c.devices), c.devices[0].share_id, c.devices[0].request_names)
           for c in checkpoint.claims]
    assert got == claims
    first = checkpoint.claims[0]
    assert (first.uid, first.namespace, first.pod_uids) == (CLAIM_UID, "default", frozenset({POD_UID}))
    assert first.devices[0].key == "test-driver.cdi.k8s.io/worker-1/dev-1"
    assert first.devices[0].cdi_ids == ("example.com/example=cdi-example",)


def test_the_kubelets_incorrect_checksum_vector_is_corrupt():
    with pytest.raises(CheckpointError, match="checksum mismatch: the file says 2930258365"):
        parse_dra_checkpoint(upstream(ENTRIES_BAD_SUM, 2930258365))


def test_invalid_json_vector_is_corrupt():
    with pytest.raises(CheckpointError, match="not JSON"):
        parse_dra_checkpoint(b"{")


def test_our_writer_reproduces_the_kubelets_bytes():
    """The file the tests write is byte for byte what the kubelet writes (upstream 'one-device')."""
    c = claim("example", "default", devices=[("test-driver.cdi.k8s.io", "worker-1", "dev-1")])
    c["metadata"]["uid"] = CLAIM_UID
    c["status"]["allocation"]["devices"]["results"][0]["request"] = "test request"
    state = claim_state(c, [POD_UID], {"dev-1": ["example.com/example=cdi-example"]})
    assert checkpoint_bytes([state]) == upstream(ONE, 2570581864)


def test_entries_key_is_accepted_with_a_right_checksum():
    c = claim("a", devices=[("gpu.example.com", "worker-1", "gpu-0")])
    blob = checkpoint_bytes([claim_state(c, [uid("p")])], list_key="Entries")
    checkpoint = parse_dra_checkpoint(blob)
    assert checkpoint.list_key == "Entries" and [x.name for x in checkpoint.claims] == ["a"]


def test_keys_match_case_insensitively_like_go():
    data = json.dumps({"kind": "DRACheckpoint", "claiminfostatelist": [
        {"claimuid": "u1", "claimname": "c", "namespace": "ns", "poduids": {"p1": {}},
         "driverstate": {"d": {"devices": [{"poolname": "p", "devicename": "x"}]}}}]})
    blob = json.dumps({"data": data, "checksum": binascii.crc32(data.encode())}).encode()
    (only,) = parse_dra_checkpoint(blob).claims
    assert (only.uid, only.name, only.pod_uids, only.devices[0].key) == ("u1", "c", frozenset({"p1"}), "d/p/x")


def test_a_driver_that_skips_node_operations_still_names_its_claim():
    data = json.dumps({"kind": "DRACheckpoint", "ClaimInfoStateList": [
        {"ClaimUID": "u1", "ClaimName": "c", "Namespace": "ns", "PodUIDs": {"p1": {}},
         "DriverState": {"net.example.com": {"Devices": None, "skipNodeOperations": ["All"]}}}]})
    blob = json.dumps({"Data": data, "Checksum": binascii.crc32(data.encode())}).encode()
    (only,) = parse_dra_checkpoint(blob).claims
    assert only.devices == () and only.drivers == ("net.example.com",)


@pytest.mark.parametrize("blob, message", [
    (b"", "not JSON"),
    (b"\xff\xfe garbage", "not JSON"),
    (b"[]", "not a checkpoint envelope"),
    (b'{"Data": 5, "Checksum": 0}', "not a checkpoint envelope"),
    (b'{"Data": "", "Checksum": 0}', "Data is not JSON"),
    (b'{"Data": "x", "Checksum": -1}', "not a checkpoint envelope"),
    (b'{"Data": "x", "Checksum": 4294967296}', "not a checkpoint envelope"),
])
def test_garbage_is_corrupt_with_the_reason(blob, message):
    with pytest.raises(CheckpointError, match=message):
        parse_dra_checkpoint(blob)


def test_one_flipped_byte_in_data_is_caught_by_the_checksum():
    c = claim("a", devices=[("gpu.example.com", "worker-1", "gpu-0")])
    blob = checkpoint_bytes([claim_state(c, [uid("p")])])
    flipped = blob.replace(b"gpu-0", b"gpu-1", 1)
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        parse_dra_checkpoint(flipped)


@pytest.mark.parametrize("entry, message", [
    ({"ClaimUID": 5}, "expected a string"),
    ({"PodUIDs": ["p"]}, "PodUIDs: expected an object"),
    ({"DriverState": {"d": {"Devices": {}}}}, "Devices is not a list"),
    ({"DriverState": {"d": {"Devices": [{"CDIDeviceIDs": "x"}]}}}, "expected a list of strings"),
])
def test_wrong_types_are_corrupt(entry, message):
    data = json.dumps({"kind": "DRACheckpoint", "ClaimInfoStateList": [entry]})
    blob = json.dumps({"Data": data, "Checksum": binascii.crc32(data.encode())}).encode()
    with pytest.raises(CheckpointError, match=message):
        parse_dra_checkpoint(blob)
