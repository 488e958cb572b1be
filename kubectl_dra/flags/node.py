"""The node flags of docs/contracts.md §7, shared by every command that predicts cgroups."""

from __future__ import annotations

import functools
from fractions import Fraction

import click

from kubectl_dra.errors import InputError


class _Parsed(click.ParamType):
    """A flag value parsed by a core function: its InputError becomes click's usage error (exit 2)
    in both programs, so ``kubectl-dra`` and ``dra-node-agent`` reject the same values the same way."""

    def __init__(self, name: str, parse):
        self.name, self._parse = name, parse

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value

        try:
            return self._parse(value)
        except InputError as exc:
            self.fail(str(exc), param, ctx)  # the core's words name the value; click names the flag


def _period(text: str) -> int:
    # start-up: help
    from kubectl_dra.cgroups.options import parse_period

    return parse_period(text)


def _sizes(text: str) -> list[int]:
    # start-up: help
    from kubectl_dra.cgroups.options import parse_hugepage_sizes

    return parse_hugepage_sizes(text)


def _factor(text: str) -> str:
    """kubelet memoryThrottlingFactor: a number in (0, 1] (its validation), kept as text."""
    try:
        factor = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        factor = None
    if factor is None or not 0 < factor <= 1:
        raise InputError(f'"{text}": a number in (0, 1], e.g. 0.9')
    return text.strip()


PERIOD = _Parsed("duration", _period)
HUGEPAGE_SIZES = _Parsed("sizes", _sizes)
THROTTLING_FACTOR = _Parsed("factor", _factor)

_SPECS = [
    (("--cgroup-driver",), dict(type=click.Choice(["systemd", "cgroupfs"]),
                                help="Kubelet cgroup driver [default: systemd].")),
    (("--runtime",), dict(type=click.Choice(["containerd", "crio"]),
                          help="Container runtime [default: from the Node, else containerd].")),
    (("--weight-formula",), dict(type=click.Choice(["linear", "quadratic"]),
                                 help="Runtime's shares->cpu.weight formula for containers (runc >= 1.3.2 and "
                                      "crun >= 1.23: quadratic) [default: quadratic]; pods always use linear.")),
    (("--cpu-cfs-period",), dict(type=PERIOD, metavar="DURATION", help="Kubelet cpuCFSQuotaPeriod [default: 100ms].")),
    (("--cpu-cfs-quota",), dict(type=click.Choice(["on", "off"]),
                                help="Kubelet cpuCFSQuota: off leaves pods and containers without CFS quota "
                                     "[default: on].")),
    (("--cpu-manager-policy",), dict(type=click.Choice(["none", "static"]),
                                     help="Kubelet CPU manager policy: static gives containers of Guaranteed pods "
                                          "with whole CPUs exclusive CPUs and no CFS quota [default: none; the agent "
                                          "reads it from cpu_manager_state].")),
    (("--runtime-hugetlb",), dict(type=click.Choice(["on", "off"]),
                                  help="Whether the runtime applies container hugepage limits (containerd's "
                                       "disable_hugetlb_controller is true by default) [default: containerd off, "
                                       "CRI-O on; the agent detects it from the cgroups].")),
    (("--hugepage-sizes",), dict(type=HUGEPAGE_SIZES, metavar="SIZES", help="Host huge page sizes, e.g. 2Mi,1Gi or none "
                                                         "[default: from the Node, else 2Mi,1Gi].")),
    (("--kubelet-dra",), dict(type=click.Choice(["on", "off"]),
                              help="Whether the kubelet adds node-allocatable DRA amounts to cgroups [default: "
                                   "from the Node's status.declaredFeatures (DRANodeAllocatableResources), else on].")),
    (("--kubelet-cgroup-root",), dict(metavar="PATH", help="Kubelet --cgroup-root [default: /].")),
    (("--memory-qos",), dict(type=click.Choice(["off", "none", "tiered", "legacy"]),
                             help="Predict Memory QoS files (memory.min/low/high): off (the MemoryQoS gate is "
                                  "off), none or tiered (its memoryReservationPolicy, 1.36+), legacy (kubelets "
                                  "before 1.36: memory.min = requests) [default: off].")),
    (("--memory-throttling-factor",), dict(type=THROTTLING_FACTOR, metavar="F", help="Kubelet memoryThrottlingFactor: Memory QoS sets "
                                                            "memory.high only when it is set [default: unset, as "
                                                            "in the 1.37 kubelet; 0.9 with --memory-qos legacy or "
                                                            "a kubelet of 1.36 or older].")),
]
_NAMES = ["cgroup_driver", "runtime", "weight_formula", "cpu_cfs_period", "cpu_cfs_quota", "cpu_manager_policy",
          "runtime_hugetlb", "hugepage_sizes", "kubelet_dra", "kubelet_cgroup_root", "memory_qos",
          "memory_throttling_factor"]
_SWITCHES = ("kubelet_dra", "cpu_cfs_quota", "runtime_hugetlb")  # on|off flags, parsed to booleans


def node_options(command):
    """Adds the node flags; the command receives ``node_flags``: only what the user set, parsed."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        raw = {name: kwargs.pop(name) for name in _NAMES}
        given = {k: v for k, v in raw.items() if v is not None}
        for name in _SWITCHES:
            if name in given:
                given[name] = given[name] == "on"
        return command(*args, node_flags=given, **kwargs)

    for decls, attrs in reversed(_SPECS):
        wrapper = click.option(*decls, default=None, **attrs)(wrapper)
    return wrapper
