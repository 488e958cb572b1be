"""One node scan, three callers: the agent's service, ``dra-node-agent scan --once`` and ``kubectl dra
verify --cgroup-root`` read the same node into the same NodeEnforcementReport. The node is the
example's worker-gpu-1: a cgroup tree with a planted divergence, and a kubelet checkpoint and CDI
specs with planted claim findings (examples/nodes, made by scripts/make_example_nodes.py)."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

from click.testing import CliRunner

from kubectl_dra.kube.options import KubeOptions
from node_agent.__main__ import cli as agent_cli
from node_agent.service import Agent, AgentConfig

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
NODE = "worker-gpu-1"
HOST = ROOT / "examples" / "nodes" / NODE
CGROUP = HOST / "sys" / "fs" / "cgroup"
KUBELET = HOST / "var" / "lib" / "kubelet"
CDI = (HOST / "etc" / "cdi", HOST / "var" / "run" / "cdi")
# the claims the planted node state yields, with their findings (examples/nodes/README and the report)
CLAIMS = [("ingest-gateway-nic-v2tc9", "false", "PreparedNotReserved,ReservedNotPrepared"),
          ("llm-inference-7c9d8b6f5d-q8wzt-gpu-7xk2m", "true", "PreparedForGonePod"),
          ("trainer-gpus-hd295", "true", "CDIDeviceMissing")]


def host_flags(kubelet: Path = KUBELET) -> list[str]:
    return ["--cgroup-root", str(CGROUP), "--kubelet-root", str(kubelet),
            "--cdi-dir", str(CDI[0]), "--cdi-dir", str(CDI[1])]


def comparable(doc: dict) -> dict:
    """A report without its scan time (each caller scans at its own moment)."""
    doc = json.loads(json.dumps(doc))
    doc["status"].pop("observedAt")
    return doc


def service_report(proc_root: str) -> dict:
    config = AgentConfig(node=NODE, cgroup_root=str(CGROUP), kubelet_root=str(KUBELET),
                         cdi_dirs=tuple(map(str, CDI)), publish=False, proc_root=proc_root)
    agent = Agent(config, KubeOptions(snapshot=str(EXAMPLE)))
    agent.connect()
    return agent.scan_once().model_dump(mode="json", by_alias=True)


def test_the_service_scan_once_and_verify_make_the_same_report(dra, tmp_path):
    once = CliRunner().invoke(agent_cli, ["scan", "--once", "--snapshot", str(EXAMPLE), "--node", NODE, *host_flags(),
                                          "-o", "json"])
    verified = dra("verify", "--snapshot", str(EXAMPLE), "--node", NODE, *host_flags(), "-o", "json")
    assert (once.exit_code, verified.exit_code) == (1, 1)  # embedder's DRAAmountMissing, and the claim findings
    report = comparable(json.loads(once.stdout))
    # verify has no PodResources client (gRPC is the agent's): it neither reads nor lists that source
    agents_sources = report["status"]["sources"]
    assert [(s["name"], s["state"]) for s in agents_sources] == [
        ("draCheckpoint", "read"), ("cdi", "read"), ("podResources", "absent")]
    mine = comparable(verified.json()["items"][0])
    assert mine["status"].pop("sources") == agents_sources[:2]
    assert mine == {**report, "status": {k: v for k, v in report["status"].items() if k != "sources"}}
    # the service also names the processes of each diverged container (--proc-root; none run in the
    # example tree); nothing else differs
    service = comparable(service_report(str(tmp_path)))
    named = {p["name"]: p.pop("processes") for p in service["status"]["pods"]}
    assert {name: processes for name, processes in named.items() if processes} == {"embedder": {"reranker": []}}
    assert [p.pop("processes") for p in report["status"]["pods"]] == [{}] * 5
    assert service == report
    # and the report holds the node's DRA state, read by each caller
    claims = [c for c in report["status"]["claims"] if c["findings"]]
    assert [(c["name"], str(c["prepared"]).lower(), ",".join(sorted({f["code"] for f in c["findings"]})))
            for c in claims] == CLAIMS


def test_verify_cgroup_root_shows_the_nodes_claims(dra):
    """Before the scan was one, verify --cgroup-root read no node DRA state: no claims table, and
    exit 0 on a node whose kubelet holds a claim prepared for a replaced claim object."""
    result = dra("verify", "--snapshot", str(EXAMPLE), "--node", NODE, *host_flags())
    assert result.exit_code == 1, result
    divergences, claims, notes = result.stdout.split("\n\n")
    rows = [line.split() for line in claims.splitlines()]
    assert rows[0] == ["NAMESPACE", "CLAIM", "PREPARED", "FINDINGS"]
    assert [(r[1], r[2], r[3]) for r in rows[1:]] == CLAIMS
    assert sum(line.startswith(f"{NODE} ml/") for line in notes.splitlines()) == 5
    assert "1 node, 5 pods: 4 match, 1 diverged, 0 unknown; 5 claims compared with the node: 5 findings" in notes
    wide = dra("verify", "--snapshot", str(EXAMPLE), "--node", NODE, *host_flags(), "-o", "wide")
    assert len(wide.stdout.split("\n\n")[1].splitlines()) == 1 + 5  # -o wide: every claim the node involves


def test_verify_never_calls_a_claim_fine_from_a_source_it_did_not_read(dra, tmp_path):
    """Without the kubelet's files nothing is said about claims (no table, no finding, each missing
    source named on stderr); a checkpoint that is no checkpoint is a finding on every claim, never a
    clean node; a PodResources socket is not verify's to read (no gRPC client): not listed, not used."""
    empty = tmp_path / "empty"
    empty.mkdir()
    bare = dra("verify", "--snapshot", str(EXAMPLE), "--node", NODE, *host_flags(empty), "-o", "json")
    doc = bare.json()["items"][0]
    assert doc["status"]["claims"] == [] and doc["status"]["summary"]["claimFindings"] == 0
    assert f"warning: {empty}/dra_manager_state: not there" in bare.stderr
    kubelet = tmp_path / "kubelet"
    shutil.copytree(KUBELET, kubelet)
    (kubelet / "dra_manager_state").write_text('{"Data": "{}", "Checksum": 1}')
    (kubelet / "pod-resources").mkdir()
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(kubelet / "pod-resources" / "kubelet.sock"))
        result = dra("verify", "--snapshot", str(EXAMPLE), "--node", NODE, *host_flags(kubelet), "-o", "json")
    status = result.json()["items"][0]["status"]
    assert [(s["name"], s["state"]) for s in status["sources"]] == [("draCheckpoint", "corrupt"), ("cdi", "read")]
    assert {c["name"]: [f["code"] for f in c["findings"]] for c in status["claims"]} == {
        "embedder-gpu-qfx82": ["CheckpointCorrupt"], "ingest-gateway-nic-v2tc9": ["CheckpointCorrupt"],
        "llm-inference-7c9d8b6f5d-r772r-gpu-2nqcv": ["CheckpointCorrupt"], "trainer-gpus-hd295": ["CheckpointCorrupt"]}
    assert result.exit_code == 1 and f"error: {kubelet}/dra_manager_state: " in result.stderr
    assert "kubelet.sock" not in result.stderr


def test_scan_and_verify_share_the_output_flags():
    """``dra-node-agent scan`` and ``kubectl dra verify`` take -o, --no-headers and --color from the
    one decorator every kubectl dra command uses: the same names, choices, defaults and help."""
    from kubectl_dra.cli.claims import claims
    from kubectl_dra.cli.verify import verify
    from node_agent.__main__ import scan_command

    def flags(command) -> dict:
        return {p.name: (p.opts, getattr(p.type, "choices", None), p.default, p.help) for p in command.params
                if p.name in ("output_format", "no_headers", "color")}

    assert flags(scan_command) == flags(verify) and len(flags(verify)) == 3
    assert flags(verify)["color"] == flags(claims)["color"] and flags(verify)["no_headers"] == flags(claims)["no_headers"]
    colored = CliRunner().invoke(agent_cli, ["scan", "--once", "--snapshot", str(EXAMPLE), "--node", NODE,
                                             *host_flags(), "--color", "always"])
    assert colored.exit_code == 1 and "\x1b[" in colored.stdout  # the CAUSE column, as verify colours it
