"""The kubelet's and runtimes' unit conversions, exactly (docs/kubernetes/kubelet-cgroups.md §1, §3).

Integer arithmetic throughout, as the Go code truncates; the quadratic weight formula is the one
place that uses floats, because runc/crun compute it in floating point too.
"""

from __future__ import annotations

import functools
import math

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
DEFAULT_PERIOD = 100000  # µs
MIN_QUOTA = 1000  # µs, the kernel's minimum quota
MAX_WEIGHT = 10000
QOS_HUGEPAGE_UNBOUNDED = 1 << 62
PAGE_SIZE = 4096


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """MilliCPUToShares: 0 -> 2; else floor(m*1024/1000) clamped to [2, 262144]."""
    if milli_cpu <= 0:
        return MIN_SHARES
    return max(MIN_SHARES, min(MAX_SHARES, milli_cpu * SHARES_PER_CPU // 1000))


def milli_cpu_to_quota(milli_cpu: int, period: int = DEFAULT_PERIOD) -> int:
    """MilliCPUToQuota: 0 -> 0 ("not set"); else floor(m*period/1000), at least 1000 µs."""
    if milli_cpu == 0:
        return 0
    return max(MIN_QUOTA, milli_cpu * period // 1000)


def shares_to_milli_cpu(shares: int) -> int:
    """The kubelet's read-back inverse: shares < 2 -> 0, else ceil(shares*1000/1024)."""
    if shares < MIN_SHARES:
        return 0
    return -(-shares * 1000 // SHARES_PER_CPU)


def quota_to_milli_cpu(quota: int, period: int = DEFAULT_PERIOD) -> int:
    if quota == -1 or period == 0:
        return 0
    return quota * 1000 // period


def weight_linear(shares: int) -> int:
    """KEP-2254 conversion: the kubelet's own (pod, QoS cgroups) and runc <= 1.3.1, crun <= 1.22."""
    if shares <= 0:
        return 0
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    return 1 + (shares - 2) * 9999 // 262142


@functools.lru_cache(maxsize=4096)
def weight_quadratic(shares: int) -> int:
    """opencontainers/cgroups >= 0.0.3 (runc >= 1.3.2) and crun >= 1.23 (cached: two logarithms and
    a power per container add up over a node, and the shares of a node's containers repeat)."""
    if shares == 0:
        return 0
    if shares <= 2:
        return 1
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    level = math.log2(shares)
    exponent = (level * level + 125 * level) / 612.0 - 7.0 / 34.0
    return int(math.ceil(math.pow(10, exponent)))


WEIGHT_FORMULAS = {"linear": weight_linear, "quadratic": weight_quadratic}


def weight_to_shares_linear(weight: int) -> int:
    """CPUWeightToCPUShares, the kubelet's read-back of cpu.weight (inverse of the linear formula)."""
    if not 1 <= weight <= MAX_WEIGHT:
        raise ValueError(f"cpu.weight {weight} is outside [1, 10000]")
    return (weight - 1) * 262142 // 9999 + 2


def systemd_rounded_quota(quota: int, period: int) -> int:
    """What the systemd driver writes: CPUQuotaPerSecUSec rounded up to 10 ms, back to the period."""
    if quota <= 0 or period <= 0:
        return quota
    per_sec = quota * 1_000_000 // period
    if quota * 1_000_000 % period:
        per_sec += 1
    per_sec = -(-per_sec // 10_000) * 10_000
    return per_sec * period // 1_000_000


def page_rounded(value: int, page: int = PAGE_SIZE) -> int:
    """The kernel keeps memory limits in pages: what reads back from memory.max/min/low/high."""
    return value // page * page


@functools.lru_cache(maxsize=64)
def hugepage_size_name(size_bytes: int) -> str:
    """Bytes -> the kernel's hugetlb file infix: 2097152 -> "2MB", 1073741824 -> "1GB"."""
    units = ["B", "KB", "MB", "GB", "TB", "PB"]
    index = 0
    while size_bytes >= 1024 and size_bytes % 1024 == 0 and index < len(units) - 1:
        size_bytes //= 1024
        index += 1
    return f"{size_bytes}{units[index]}"


def cpu_max(quota: int, period: int) -> str:
    """cpu.max as the kernel prints it: "<quota> <period>", or "max <period>" when unlimited."""
    return f"{quota} {period}" if quota > 0 else f"max {period}"
