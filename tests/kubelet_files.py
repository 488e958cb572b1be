"""The kubelet's node files, written as the kubelet writes them, for tests: the DRA checkpoint
(Go's encoding/json: struct field order, no spaces; its CRC-32 computed here with binascii, apart
from the code under test) and CDI specs."""

from __future__ import annotations

import binascii
import json
from pathlib import Path

KIND, API_VERSION = "DRACheckpoint", "checkpoint.dra.kubelet.k8s.io/v1"


def _go_json(value) -> str:
    # encoding/json escapes <, > and & in strings; the rest matches json.dumps without spaces
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def claim_state(claim: dict, pod_uids, cdi_ids: dict[str, list[str]] | None = None) -> dict:
    """A ClaimInfoState for a builder claim: its allocated devices, prepared for ``pod_uids``;
    ``cdi_ids``: device name -> its CDI IDs (default: one ID per device, vendor example.com/gpu)."""
    drivers: dict[str, dict] = {}
    for result in claim["status"]["allocation"]["devices"]["results"]:
        ids = (cdi_ids or {}).get(result["device"], [f"example.com/gpu={result['device']}"])
        drivers.setdefault(result["driver"], {"Devices": []})["Devices"].append(
            {"PoolName": result["pool"], "DeviceName": result["device"], "ShareID": result.get("shareID"),
             "RequestNames": [result["request"]], "CDIDeviceIDs": ids})
    meta = claim["metadata"]
    return {"ClaimUID": meta["uid"], "ClaimName": meta["name"], "Namespace": meta["namespace"],
            "PodUIDs": {u: {} for u in pod_uids}, "DriverState": drivers}


def checkpoint_bytes(states: list[dict], list_key: str = "ClaimInfoStateList") -> bytes:
    data = _go_json({"kind": KIND, "apiVersion": API_VERSION, list_key: states})
    return _go_json({"Data": data, "Checksum": binascii.crc32(data.encode())}).encode()


def write_checkpoint(kubelet_root: Path, states: list[dict]) -> Path:
    kubelet_root.mkdir(parents=True, exist_ok=True)
    path = kubelet_root / "dra_manager_state"
    path.write_bytes(checkpoint_bytes(states))
    return path


def write_cdi_spec(directory: Path, file_name: str, kind: str, devices: list[str]) -> Path:
    """A spec as a driver writes it (JSON), each device with one device node."""
    directory.mkdir(parents=True, exist_ok=True)
    spec = {"cdiVersion": "0.8.0", "kind": kind,
            "devices": [{"name": d, "containerEdits": {"deviceNodes": [{"path": f"/dev/{d}"}]}} for d in devices]}
    path = directory / file_name
    path.write_text(json.dumps(spec, indent=2))
    return path
