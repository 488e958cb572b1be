"""Time ``kubectl_dra.overlays.explain.evaluate`` on synthetic input of a given size.

The default size (1,000 NodeOverlays, 500 instance types, 10 NodePools) is far above what a
cluster has; the goal is that evaluation stays around a second there. Overlays are a realistic
mix: instance-type price overrides, NodePool-wide spot discounts, family-wide capacity, bounded
CPU requirements with zones, template-label capacity, and a few negative selectors. Usage:

    .venv/bin/python scripts/bench_overlays.py [--overlays N] [--types N] [--pools N] [--runs N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubectl_dra.model.karpenter import NodeOverlay, NodePool  # noqa: E402
from kubectl_dra.overlays.catalog import InstanceType  # noqa: E402
from kubectl_dra.overlays.explain import evaluate  # noqa: E402

ZONES = ("zone-a", "zone-b", "zone-c")
CAPACITY_TYPES = ("on-demand", "spot")


def build(n_overlays: int, n_types: int, n_pools: int, seed: int = 7):
    rnd = random.Random(seed)
    pools = [NodePool.model_validate({
        "metadata": {"name": f"np-{i}"},
        "spec": {"template": {"metadata": {"labels": {"team": f"t{i % 4}"} if i % 2 else {}}}},
    }) for i in range(n_pools)]
    types = []
    for i in range(n_types):
        family, size = f"f{i // 10}", 2 ** (i % 10)
        name = f"{family}.{size}x"
        types.append(InstanceType.model_validate({
            "name": name,
            "labels": {"node.kubernetes.io/instance-type": name, "kubernetes.io/arch": "amd64",
                       "kubernetes.io/os": "linux", "example.com/instance-family": family,
                       "example.com/instance-cpu": str(size), "topology.kubernetes.io/region": "r1"},
            "requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(ZONES)},
                             {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(CAPACITY_TYPES)}],
            "capacity": {"cpu": str(size), "memory": f"{size * 4}Gi", "pods": "110"},
            "offerings": [{"zone": z, "capacityType": c, "price": round(0.05 * size * (0.4 if c == "spot" else 1), 4)}
                          for z in ZONES for c in CAPACITY_TYPES],
        }))
    overlays = []
    for i in range(n_overlays):
        kind = i % 20
        spec: dict = {"weight": rnd.randint(1, 50)}
        if kind < 8:
            spec["requirements"] = [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                     "values": [rnd.choice(types).name for _ in range(rnd.randint(1, 3))]}]
            spec["priceAdjustment"] = f"-{rnd.randint(1, 30)}%"
        elif kind < 12:
            spec["requirements"] = [{"key": "karpenter.sh/nodepool", "operator": "In",
                                     "values": [rnd.choice(pools).name]},
                                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
            spec["priceAdjustment"] = f"+{rnd.randint(1, 9)}.5"
        elif kind < 15:
            spec["requirements"] = [{"key": "example.com/instance-family", "operator": "In",
                                     "values": [f"f{rnd.randrange(n_types // 10 or 1)}"]}]
            spec["capacity"] = {"example.com/fuse": str(rnd.randint(1, 4))}
        elif kind < 17:
            spec["requirements"] = [{"key": "example.com/instance-cpu", "operator": "Gt",
                                     "values": [str(rnd.choice((4, 32, 128)))]},
                                    {"key": "topology.kubernetes.io/zone", "operator": "In",
                                     "values": [rnd.choice(ZONES)]},
                                    {"key": "example.com/instance-family", "operator": "In",
                                     "values": [f"f{rnd.randrange(n_types // 10 or 1)}"]}]
            spec["price"] = f"{rnd.randint(1, 40)}.25"
        elif kind < 19:
            spec["requirements"] = [{"key": "team", "operator": "In", "values": [f"t{rnd.randrange(4)}"]},
                                    {"key": "node.kubernetes.io/instance-type", "operator": "In",
                                     "values": [rnd.choice(types).name]}]
            spec["capacity"] = {"hugepages-2Mi": f"{rnd.randint(1, 8)}Gi"}
        else:
            spec["requirements"] = [{"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["arm64"]},
                                    {"key": "example.com/instance-family", "operator": "In",
                                     "values": [f"f{rnd.randrange(n_types // 10 or 1)}"]}]
            spec["priceAdjustment"] = "+1%"
        overlays.append(NodeOverlay.model_validate({"metadata": {"name": f"overlay-{i:04d}"}, "spec": spec}))
    return overlays, pools, types


def bench(n_overlays: int = 1000, n_types: int = 500, n_pools: int = 10, runs: int = 3) -> float:
    """Median seconds of ``evaluate`` over ``runs`` runs (input building not included)."""
    overlays, pools, types = build(n_overlays, n_types, n_pools)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = evaluate(overlays, pools, types)
        times.append(time.perf_counter() - start)
    statuses = {s: sum(o.status == s for o in result.overlays) for s in ("Ready", "Conflict", "RuntimeValidation")}
    matches = sum(len(o.matches) for o in result.overlays)
    print(f"{n_overlays} overlays x {n_types} instance types x {n_pools} NodePools: "
          f"median {statistics.median(times):.3f} s (min {min(times):.3f} s, {runs} runs); "
          f"{matches} matches, statuses {statuses}, {len(result.findings)} findings")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--overlays", type=int, default=1000)
    parser.add_argument("--types", type=int, default=500)
    parser.add_argument("--pools", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    bench(args.overlays, args.types, args.pools, args.runs)


if __name__ == "__main__":
    main()
