"""The Karpenter tier's world: a small set of instance types, written twice from one table, once as
the kwok provider reads them (INSTANCE_TYPES_FILE_PATH, kwok/cloudprovider/helpers.go
InstanceTypeOptions) and once as kubectl-dra's InstanceTypeCatalog, with the labels the provider
derives (setDefaultOptions, newInstanceType: family from the name before the first "-" or ".",
size = cpu); and the Karpenter process itself, started beside a control plane."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

VERSION = "v1.14.1"
ROOT = Path(os.environ.get("KUBECTL_DRA_CACHE", Path.home() / ".cache" / "kubectl-dra")) / f"karpenter-{VERSION}"
BIN, CRDS = ROOT / "bin", ROOT / "crds"
ZONES = ("test-zone-a", "test-zone-b")

# name, cpu, memory, on-demand price, spot price (USD/h, per zone the same)
TABLE = [
    ("c-2x-amd64-linux", 2, "4Gi", 0.10, 0.04),
    ("c-4x-amd64-linux", 4, "8Gi", 0.20, 0.08),
    ("c-8x-amd64-linux", 8, "16Gi", 0.40, 0.16),
    ("m-4x-amd64-linux", 4, "16Gi", 0.25, 0.10),
    ("m-16x-amd64-linux", 16, "64Gi", 1.00, 0.40),
]


def binaries_present() -> bool:
    return (BIN / "karpenter-kwok").is_file() and (CRDS / "karpenter.kwok.sh_kwoknodeclasses.yaml").is_file()


def kwok_instance_types() -> list[dict]:
    out = []
    for name, cpu, memory, on_demand, spot in TABLE:
        offerings = [{"Price": price, "Available": True, "Requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [kind]},
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}
            for zone in ZONES for kind, price in (("spot", spot), ("on-demand", on_demand))]
        out.append({"name": name, "offerings": offerings, "architecture": "amd64", "operatingSystems": ["linux"],
                    "resources": {"cpu": str(cpu), "memory": memory}})
    return out


def catalog(node_pools: list[str]) -> dict:
    """The same instance types as kubectl-dra's InstanceTypeCatalog, offered to ``node_pools``."""
    types = []
    for name, cpu, memory, on_demand, spot in TABLE:
        types.append({
            "name": name, "nodePools": list(node_pools),
            "capacity": {"cpu": str(cpu), "memory": memory, "pods": "110"},
            "labels": {"node.kubernetes.io/instance-type": name, "kubernetes.io/arch": "amd64",
                       "kubernetes.io/os": "linux", "karpenter.kwok.sh/instance-family": name.split("-")[0],
                       "karpenter.kwok.sh/instance-size": str(cpu), "karpenter.kwok.sh/instance-cpu": str(cpu),
                       "karpenter.kwok.sh/instance-memory": memory},
            "offerings": [{"capacityType": kind, "zone": zone, "price": price}
                          for zone in ZONES for kind, price in (("spot", spot), ("on-demand", on_demand))],
            "requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(ZONES)},
                             {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]}],
        })
    return {"apiVersion": "kubectl-dra.io/v1alpha1", "kind": "InstanceTypeCatalog", "instanceTypes": types}


def prepared_plane(workdir: Path):
    """A started control plane with kube-scheduler (it marks pods Unschedulable, which is what
    Karpenter provisions for), Karpenter's CRDs and a KWOKNodeClass named default."""
    import yaml

    from controlplane import started
    from loader import load

    plane = started(workdir, scheduler=True)
    try:
        load(plane, [yaml.safe_load(path.read_text()) for path in sorted(CRDS.glob("*.yaml"))])
        plane.request("POST", "/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses",
                      {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass", "metadata": {"name": "default"}})
    except BaseException:
        plane.stop()
        raise
    return plane


def start(plane, workdir: Path, gates: str = "NodeOverlay=true", **env_extra: str):
    """karpenter-kwok against ``plane``, as one more of its processes (``plane.stop()`` stops it
    first, ``plane.tail()`` reads its log): leader election off, the NodeOverlay gate as given, its
    two ports free ones, the tier's instance types."""
    import json

    from controlplane import Process, free_port

    types = workdir / "instance-types.json"
    types.write_text(json.dumps(kwok_instance_types()))
    metrics = free_port()
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig(workdir / "karpenter.kubeconfig")),
           "DISABLE_LEADER_ELECTION": "true", "FEATURE_GATES": gates, "METRICS_PORT": str(metrics),
           "HEALTH_PROBE_PORT": str(free_port()), "LOG_LEVEL": "debug", "INSTANCE_TYPES_FILE_PATH": str(types),
           "BATCH_MAX_DURATION": "2s", "BATCH_IDLE_DURATION": "500ms", **env_extra}
    log = workdir / "karpenter.log"
    with open(log, "wb") as out:
        popen = subprocess.Popen([str(BIN / "karpenter-kwok")], env=env, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    proc = Process("karpenter-kwok", popen, log)
    proc.metrics_url = f"http://127.0.0.1:{metrics}/metrics"
    plane.processes.append(proc)
    return proc


def start_driver(plane, workdir: Path):
    """dra-kwok-driver against ``plane``: it reads only KUBECONFIG and serves on the fixed ports 8082
    and 8083 (dra-kwok-driver/main.go); it publishes, at start and every 30 s, the ResourceSlices
    its DRAConfigs give the kwok nodes they select."""
    from controlplane import Process

    log = workdir / "dra-kwok-driver.log"
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig(workdir / "driver.kubeconfig"))}
    with open(log, "wb") as out:
        popen = subprocess.Popen([str(BIN / "dra-kwok-driver")], env=env, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    proc = Process("dra-kwok-driver", popen, log)
    plane.processes.append(proc)
    return proc
