"""One line naming every node option a prediction used and where each came from."""

from __future__ import annotations

GI, MI = 1 << 30, 1 << 20
LABELS = [  # JSON key -> how the line names it
    ("cgroupDriver", "cgroup driver"), ("runtime", "runtime"), ("weightFormula", "container weight"),
    ("cpuCfsPeriod", "CFS period"), ("cpuCfsQuota", "CFS quota"), ("cpuManagerPolicy", "CPU manager"),
    ("hugepageSizes", "huge pages"), ("runtimeHugetlb", "runtime hugetlb"), ("kubeletDra", "kubelet DRA"),
]


def _value(key: str, value) -> str:
    if key == "cpuCfsPeriod":
        return f"{value}us"
    if key == "hugepageSizes":
        return ",".join(f"{s // MI}Mi" if s < GI else f"{s // GI}Gi" for s in value) or "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return "runtime default" if value is None else str(value)


def node_options_line(options: dict, sources: dict[str, str]) -> str:
    """``options``: the NodeOptions document (camelCase keys); ``sources``: key -> where it came from."""
    unknown = "source not reported" if not sources else "default"  # reports from agents before sources
    parts = [f"{label} {_value(key, options.get(key))} ({sources.get(key, unknown)})"
             for key, label in LABELS if key in options]
    return "Node options: " + ", ".join(parts)
