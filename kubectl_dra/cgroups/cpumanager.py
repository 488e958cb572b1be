"""The kubelet's CPU manager checkpoint (``cpu_manager_state``): policy and exclusive cpusets.

Two shapes (docs/kubernetes/node-state.md §3): the legacy top-level ``policyName``, ``defaultCpuSet``, ``entries``
(pod UID -> container -> cpuset), and 1.37's ``data`` (a JSON *string* holding the same keys, plus
``podEntries`` and ``baselines``), which is authoritative when present. A container holds exclusive
CPUs exactly when ``entries[podUID][container]`` is a non-empty cpuset (``containerHasExclusiveCPUs``).
Checksums: 1.37's ``dataChecksum`` is FNV-32a of spew's ``%#v`` of the ``data`` string, i.e. of
``(string)`` followed by the string (checkpoint.go ``MarshalCheckpoint``; upstream vector: data
``{"policyName":"none","defaultCPUSet":"4-6"}`` -> 657950972, state_checkpoint_test.go v1.37.2), so it
is verified here, and a mismatch or a missing one is refused as the kubelet refuses it ("checkpoint is
corrupted"). The legacy ``checksum`` hashes a dump of a Go struct: not reproducible, not verified.
"""

from __future__ import annotations

import json

from pydantic import Field

from kubectl_dra.decoding import TooDeep, json_value
from kubectl_dra.document import Part


class CPUManagerState(Part):
    policy_name: str
    default_cpu_set: str = ""
    entries: dict[str, dict[str, str]] = Field(default_factory=dict)  # pod UID -> container -> cpuset
    form: str = "legacy"  # legacy | data (1.37)

    def exclusive(self, pod_uid: str) -> dict[str, str]:
        """Container -> exclusive cpuset for one pod (empty: none of its containers is pinned)."""
        return {name: cpus for name, cpus in self.entries.get(pod_uid, {}).items() if cpus}


class CPUManagerStateError(ValueError):
    """The file is not a CPU manager checkpoint this tool can read."""


def _entries(value, where: str) -> dict[str, dict[str, str]]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(containers, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in containers.items())
            for containers in value.values()):
        raise CPUManagerStateError(f"{where}: entries must map pod UIDs to container -> cpuset")
    return value


def data_checksum(data: str) -> int:
    """The kubelet's ``dataChecksum`` of a ``data`` string (see the module docstring)."""
    value = 0x811C9DC5
    for byte in b"(string)" + data.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def _cpuset(value, where: str) -> str:
    if not isinstance(value, str) or parse_cpuset(value) is None:
        raise CPUManagerStateError(f"{where} {value!r} is not a cpuset (e.g. 0-3,8): the kubelet cannot parse it either")
    return value


def parse_cpu_manager_state(text: str) -> CPUManagerState:
    try:
        document = json_value(text)
    except TooDeep as exc:
        raise CPUManagerStateError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise CPUManagerStateError(f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(document, dict):
        raise CPUManagerStateError("not a JSON object")
    form = "legacy"
    if isinstance(document.get("data"), str) and document["data"]:
        try:
            data = json_value(document["data"])
        except TooDeep as exc:
            raise CPUManagerStateError(f"data: {exc}") from None
        except json.JSONDecodeError as exc:
            raise CPUManagerStateError(f"data: not JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise CPUManagerStateError("data: not a JSON object")
        if "dataChecksum" not in document:
            raise CPUManagerStateError("data without dataChecksum: the kubelet refuses it as corrupted")
        expected = document["dataChecksum"]
        if not isinstance(expected, int) or isinstance(expected, bool) or expected != data_checksum(document["data"]):
            raise CPUManagerStateError(f"dataChecksum {expected!r} does not match data (computed "
                                       f"{data_checksum(document['data'])}): the checkpoint is corrupted, and the "
                                       "kubelet refuses it too")
        document, form = data, "data"
    policy = document.get("policyName")
    if not isinstance(policy, str) or not policy:
        raise CPUManagerStateError("no policyName")
    default = _cpuset(document.get("defaultCpuSet") or "", "defaultCpuSet")
    entries = _entries(document.get("entries"), form)
    for uid, containers in entries.items():
        for name, cpus in containers.items():
            _cpuset(cpus, f"entries[{uid}][{name}]")
    return CPUManagerState(policy_name=policy, default_cpu_set=default, entries=entries, form=form)


MAX_CPUS = 1 << 16  # above the kernel's CONFIG_NR_CPUS limit (8192 on x86-64, 4096 on arm64)


def parse_cpuset(text: str) -> frozenset[int] | None:
    """``0-3,8`` -> {0, 1, 2, 3, 8}; ``""`` -> {}; None for text that is no cpuset."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        if not (low.isascii() and low.isdigit()) or (high and not (high.isascii() and high.isdigit())):
            return None
        first, last = int(low), int(high or low)
        if last < first or last >= MAX_CPUS:  # no kernel numbers a CPU that high: not a cpuset, not a huge set
            return None
        cpus.update(range(first, last + 1))
    return frozenset(cpus)
