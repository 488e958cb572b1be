"""The kubelet's DRA checkpoint, ``<kubelet-root>/dra_manager_state``: which claims it prepared,
for which pods, with which devices and CDI IDs.

The envelope is ``{"Data": "<JSON text>", "Checksum": <CRC-32/IEEE of Data's bytes>}`` (Go field
names, no JSON tags); ``Data`` holds ``kind: DRACheckpoint`` and the claim list under
``ClaimInfoStateList`` (``Entries`` from early 1.31 development builds is accepted too). Read as
the kubelet's ``encoding/json`` reads it: keys match case-insensitively when there is no exact
match, unknown keys and a missing ``RequestNames`` are fine (upgrades), ``null`` lists are empty.
A wrong checksum or malformed data is :class:`CheckpointError`; a kubelet given that file refuses
to start its DRA manager, so nothing may be concluded from it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from kubectl_dra.decoding import json_value

LIST_KEYS = ("ClaimInfoStateList", "Entries")


class CheckpointError(ValueError):
    """The file is not a DRA checkpoint the kubelet would load."""


@dataclass(frozen=True, slots=True)
class PreparedDevice:
    driver: str
    pool: str
    device: str
    share_id: str | None = None
    request_names: tuple[str, ...] = ()
    cdi_ids: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True, slots=True)
class PreparedClaim:
    uid: str
    name: str
    namespace: str
    pod_uids: frozenset[str]
    devices: tuple[PreparedDevice, ...] = ()
    drivers: tuple[str, ...] = ()  # every driver with allocation results, devices or not


@dataclass(frozen=True, slots=True)
class DRACheckpoint:
    checksum: int
    api_version: str
    list_key: str
    claims: tuple[PreparedClaim, ...]


def _get(obj: dict, key: str):
    """A Go struct field from a JSON object: the exact key, else the first case-insensitive one."""
    if key in obj:
        return obj[key]
    folded = key.casefold()
    for name, value in obj.items():
        if name.casefold() == folded:
            return value
    return None


def _object(value, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CheckpointError(f"{where}: expected an object, found {type(value).__name__}")
    return value


def _strings(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CheckpointError(f"{where}: expected a list of strings")
    return tuple(value)


def _string(value, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CheckpointError(f"{where}: expected a string, found {type(value).__name__}")
    return value


def _claim(entry, index: int) -> PreparedClaim:
    where = f"claim {index}"
    entry = _object(entry, where)
    drivers = _object(_get(entry, "DriverState"), f"{where} DriverState")
    devices = []
    for driver, state in drivers.items():
        listed = _get(_object(state, f"{where} driver {driver}"), "Devices")
        if listed is not None and not isinstance(listed, list):
            raise CheckpointError(f"{where} driver {driver}: Devices is not a list")
        for n, device in enumerate(listed or ()):
            at = f"{where} driver {driver} device {n}"
            device = _object(device, at)
            share = _get(device, "ShareID")
            devices.append(PreparedDevice(
                driver=driver, pool=_string(_get(device, "PoolName"), at), device=_string(_get(device, "DeviceName"), at),
                share_id=_string(share, at) if share is not None else None,
                request_names=_strings(_get(device, "RequestNames"), at), cdi_ids=_strings(_get(device, "CDIDeviceIDs"), at)))
    pods = _object(_get(entry, "PodUIDs"), f"{where} PodUIDs")
    return PreparedClaim(uid=_string(_get(entry, "ClaimUID"), where), name=_string(_get(entry, "ClaimName"), where),
                         namespace=_string(_get(entry, "Namespace"), where), pod_uids=frozenset(pods),
                         devices=tuple(devices), drivers=tuple(drivers))


def parse_dra_checkpoint(blob: bytes) -> DRACheckpoint:
    try:
        envelope = json_value(blob)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"not JSON ({exc})") from None
    if not isinstance(envelope, dict):
        raise CheckpointError("not a checkpoint envelope (a JSON object with Data and Checksum)")
    data, checksum = _get(envelope, "Data"), _get(envelope, "Checksum")
    if not isinstance(data, str) or not isinstance(checksum, int) or isinstance(checksum, bool) \
            or not 0 <= checksum < 1 << 32:
        raise CheckpointError("not a checkpoint envelope (a JSON object with Data and Checksum)")
    computed = zlib.crc32(data.encode("utf-8", "surrogatepass"))
    if computed != checksum:
        raise CheckpointError(f"checksum mismatch: the file says {checksum}, its data sums to {computed}")
    try:
        content = json_value(data)
    except ValueError as exc:
        raise CheckpointError(f"Data is not JSON ({exc})") from None
    if not isinstance(content, dict):
        raise CheckpointError("Data is not a JSON object")
    key = next((k for k in LIST_KEYS if _get(content, k) is not None), LIST_KEYS[0])
    entries = _get(content, key)
    if entries is not None and not isinstance(entries, list):
        raise CheckpointError(f"{key} is not a list")
    return DRACheckpoint(checksum=checksum, api_version=_string(_get(content, "apiVersion"), "apiVersion"),
                         list_key=key, claims=tuple(_claim(e, i) for i, e in enumerate(entries or ())))
