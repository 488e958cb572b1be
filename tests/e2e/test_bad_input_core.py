"""Bad values, names and severities in the core (issue 23): each is a named problem with a
documented exit code and keeps what is still true, never an "unexpected ... (this is a bug)"."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

EXAMPLE = Path("examples/cluster")
CATALOG = "karpenter/instance-types.yaml"


def _snapshot(tmp_path: Path) -> Path:
    target = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, target)
    return target


def _edit_catalog(snapshot: Path, edit) -> None:
    path = snapshot / CATALOG
    doc = yaml.safe_load(path.read_text())
    edit(doc)
    path.write_text(yaml.safe_dump(doc))


def _no_bug(result) -> None:
    assert "unexpected" not in result.stderr and "Traceback" not in result.stderr, result.stderr


# -- item 7: requirement shapes ------------------------------------------------------------------

@pytest.mark.parametrize("requirement,reason", [
    ({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["abc"]}, "single non-negative integer"),
    ({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": []}, "single non-negative integer"),
    ({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["-1"]}, "single non-negative integer"),
    ({"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lte", "values": ["1", "2"]}, "single non-negative integer"),
    ({"key": "example.com/x", "operator": "In", "values": []}, "at least one value"),
    ({"key": "example.com/x", "operator": "NotIn"}, "at least one value"),
    ({"key": "example.com/x", "operator": "Exists", "values": ["a"]}, "no values"),
    ({"key": "example.com/x", "operator": "Near", "values": ["a"]}, "unsupported operator"),
])
def test_catalog_requirement_is_a_named_invalid_field(tmp_path, dra, requirement, reason):
    snapshot = _snapshot(tmp_path)
    _edit_catalog(snapshot, lambda doc: doc["instanceTypes"][0]["requirements"].append(requirement))
    result = dra("overlays", "--snapshot", str(snapshot))
    _no_bug(result)
    assert result.exit_code == 4, result
    assert "instance type m7i.2xlarge: requirements[2]" in result.stderr and reason in result.stderr
    # the other instance types are still evaluated; the bad one is left out, not guessed
    assert "g6e.12xlarge" in result.stdout and "m7i.2xlarge" not in result.stdout
    node = dra("explain", "node", "worker-gpu-1", "--snapshot", str(snapshot))
    _no_bug(node)
    assert node.exit_code == 4 and "Node worker-gpu-1" in node.stdout
    assert "requirements[2]" in node.stderr


def test_nodeoverlay_requirement_that_does_not_read_makes_the_overlay_invalid(tmp_path, dra):
    """A value that is not text is dropped from the view; matching without it would widen the
    overlay, so the overlay is invalid (the CRD refuses it) instead."""
    snapshot = _snapshot(tmp_path)
    (snapshot / "karpenter" / "bad-overlay.yaml").write_text(yaml.safe_dump({
        "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": "badvals"},
        "spec": {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                   "values": [5, "m7i.2xlarge"]}], "price": "1.0"}}))
    result = dra("overlays", "--snapshot", str(snapshot), "-o", "json")
    _no_bug(result)
    doc = json.loads(result.stdout)
    overlay = next(o for o in doc["overlays"] if o["name"] == "badvals")
    assert overlay["status"] == "RuntimeValidation" and overlay["matches"] == []
    assert result.exit_code == 4 and "spec.requirements[0].values[0]" in result.stderr


@pytest.mark.parametrize("price", [-1, float("inf"), float("nan"), "-0.5"])
def test_catalog_price_that_is_no_price_is_unknown_and_said(tmp_path, dra, price):
    snapshot = _snapshot(tmp_path)
    _edit_catalog(snapshot, lambda doc: doc["instanceTypes"][0]["offerings"][1].update(price=price))
    result = dra("overlays", "--snapshot", str(snapshot), "-o", "json")
    _no_bug(result)
    assert result.exit_code == 4, result
    assert "instance type m7i.2xlarge: offerings[1].price" in result.stderr
    assert "finite number >= 0" in result.stderr and "price is unknown" in result.stderr
    doc = json.loads(result.stdout)
    it = next(i for i in doc["instanceTypes"] if i["name"] == "m7i.2xlarge")
    prices = [o["basePrice"] for o in it["offerings"]]
    assert None in prices and 0.4032 in prices  # only that one offering's price is unknown


def test_catalog_unknown_api_version_is_said(tmp_path, dra):
    snapshot = _snapshot(tmp_path)
    _edit_catalog(snapshot, lambda doc: doc.update(apiVersion="kubectl-dra.io/v9"))
    catalog = tmp_path / "catalog.yaml"
    shutil.move(snapshot / CATALOG, catalog)
    result = dra("overlays", "--snapshot", str(snapshot), "--catalog", str(catalog))
    _no_bug(result)
    assert result.exit_code == 4 and "apiVersion 'kubectl-dra.io/v9'" in result.stderr


# -- item 8: CEL past the evaluator's budget -----------------------------------------------------

def test_selector_past_the_iteration_budget_is_no_verdict(tmp_path, dra):
    snapshot = _snapshot(tmp_path)
    path = snapshot / "workloads" / "pending.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    nested = "true"
    for depth in range(5):  # 111,110 iterations
        nested = f"[0,1,2,3,4,5,6,7,8,9].all(x{depth}, {nested})"
    claim = next(d for d in docs if d and d["kind"] == "ResourceClaim" and d["metadata"]["name"] == "llm-70b-gpu-x7k2p")
    claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": nested}}]
    path.write_text(yaml.safe_dump_all(docs))
    for args in (["explain", "claim", "llm-70b-gpu-x7k2p", "-n", "ml"], ["explain", "pod", "llm-70b", "-n", "ml"],
                 ["claims", "-A", "--findings"]):
        result = dra(*args, "--snapshot", str(snapshot))
        _no_bug(result)
        assert result.exit_code == 0, (args, result)
    result = dra("explain", "claim", "llm-70b-gpu-x7k2p", "-n", "ml", "--snapshot", str(snapshot), "-o", "json")
    doc = json.loads(result.stdout)
    # not Unsatisfiable: no verdict of ours (Unschedulable is what the scheduler last wrote on the pod, quoted)
    assert [f["code"] for f in doc["findings"]] == ["Unschedulable", "AllocationUnknown"]
    assert "the scheduler last wrote" in doc["findings"][0]["message"]
    assert "actual cost limit exceeded" in doc["findings"][1]["message"]
    assert not doc["allocation"]["feasibleNodes"]


# -- item 11: names that do not exist ------------------------------------------------------------

@pytest.mark.parametrize("flag,existing", [
    ("--nodepool", "default, gpu"),
    ("--overlay", "cpu-hugepages, gpu-negotiated-rate, gpu-savings-plan"),
    ("--instance-type", "c7i.16xlarge, g6e.12xlarge, g6e.24xlarge, m7i.2xlarge"),
])
def test_overlays_filter_must_name_what_exists(dra, flag, existing):
    result = dra("overlays", "--snapshot", str(EXAMPLE), flag, "nope")
    assert result.exit_code == 3 and result.stdout == ""
    assert f'{flag}: ' in result.stderr and '"nope" not found' in result.stderr and existing in result.stderr
    found = dra("overlays", "--snapshot", str(EXAMPLE), flag, existing.split(", ")[0])
    assert found.exit_code == 0 and found.stdout


@pytest.mark.parametrize("args", [
    ["explain", "claim", "llm-70b-gpu-x7k2p", "-n", "ml"],
    ["explain", "claim", "risk-engine-cpus", "-n", "default"],
    ["explain", "pod", "llm-70b", "-n", "ml"],
])
def test_explain_node_flag_must_name_a_node(dra, args):
    result = dra(*args, "--node", "nope", "--snapshot", str(EXAMPLE))
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.strip() == f'error: node "nope" not found (snapshot {EXAMPLE})'
    good = dra(*args, "--node", "worker-gpu-1", "--snapshot", str(EXAMPLE))
    assert good.exit_code in (0, 4) and good.stdout


# -- item 13: the taint dry run, as the server would take the rule -------------------------------

def _rule(tmp_path: Path, taint: dict, selector=None) -> str:
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r1"},
        "spec": {"deviceSelector": selector or {"driver": "gpu.example.com", "pool": "worker-gpu-2"},
                 "taint": {"key": "example.com/maintenance", **taint}}}))
    return str(path)


@pytest.mark.parametrize("taint,message", [
    ({"effect": "Evict"}, 'spec.taint.effect: Unsupported value: "Evict": supported values: "NoExecute", '
                          '"NoSchedule", "None"'),
    ({"effect": ""}, "spec.taint.effect: Required value"),
    ({"effect": "NoExecute", "timeAdded": "yesterday"}, 'spec.taint.timeAdded: Invalid value: "yesterday"'),
    ({"effect": "NoExecute", "timeAdded": "2026-11-22"}, "spec.taint.timeAdded: Invalid value"),
])
def test_taint_rule_the_server_refuses_is_an_error(tmp_path, dra, taint, message):
    result = dra("taints", "--dry-run", "-f", _rule(tmp_path, taint), "--snapshot", str(EXAMPLE))
    assert result.exit_code == 3 and result.stdout == "", result  # never the eviction exit 1
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert 'DeviceTaintRule "r1" is invalid' in result.stderr


def test_taint_rule_valid_time_added_is_accepted(tmp_path, dra):
    result = dra("taints", "--dry-run", "-f", _rule(tmp_path, {"effect": "NoSchedule",
                                                                 "timeAdded": "2026-11-22T10:00:00Z"}),
                 "--snapshot", str(EXAMPLE))
    assert result.exit_code == 0 and "BlocksNewAllocations" in result.stdout and result.stderr == ""


def test_taint_rule_unknown_field_is_the_servers_warning(tmp_path, dra):
    path = _rule(tmp_path, {"effect": "NoExecute"},
                 selector={"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]})
    result = dra("taints", "--dry-run", "-f", path, "--snapshot", str(EXAMPLE))
    warning = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert len(warning) == 1 and 'unknown field "spec.deviceSelector.selectors"' in warning[0]
    # what the server would store: a {} selector, every device
    assert "DeviceTaintRuleTooBroad" in result.stdout and result.exit_code == 1


def test_podgroup_reserved_claim_shows_the_groups_pods(tmp_path, dra):
    path = _rule(tmp_path, {"effect": "NoExecute"},
                 selector={"driver": "gpu.example.com", "pool": "worker-gpu-1", "device": "gpu-1"})
    result = dra("taints", "--dry-run", "-f", path, "--snapshot", str(EXAMPLE), "-o", "json")
    doc = json.loads(result.stdout)
    consumer = doc["devices"][0]["consumers"][0]
    assert consumer["claim"] == "ml/trainer-gpus-hd295" and consumer["outcome"] == "WouldEvict"
    assert consumer["pods"] == ["ml/trainer-0-h6h2p", "ml/trainer-1-gl2xk"]
    message = next(f["message"] for f in doc["findings"] if f["code"] == "DeviceTaintedNoExecute")
    assert "pods ml/trainer-0-h6h2p, ml/trainer-1-gl2xk would be evicted" in message
    assert "pods no scheduled pod" not in message


# -- item 14: --sort-by findings -----------------------------------------------------------------

def test_sort_by_findings_counts_the_allocation_findings(dra):
    result = dra("claims", "-A", "--snapshot", str(EXAMPLE), "--sort-by", "findings", "-o", "json")
    counts = [len(item["findings"]) for item in json.loads(result.stdout)["items"]]
    assert counts == sorted(counts) and counts[-1] > 0
    unsatisfiable = [i["name"] for i in json.loads(result.stdout)["items"] if "Unsatisfiable" in i["findings"]]
    assert unsatisfiable


# -- item 16: one severity per finding code, the README's ---------------------------------------

def _readme_severities() -> dict[str, set[str]]:
    cells = re.findall(r"^\| ((?:`[A-Z][A-Za-z]+`(?:, )?)+) \| ([^|]+) \|", Path("README.md").read_text(), re.M)
    rows = [(code, set(re.findall(r"\b(error|warning|info)\b", cell)))
            for codes, cell in cells for code in re.findall(r"`([A-Za-z]+)`", codes)]
    rows = [(code, severities) for code, severities in rows if severities]  # finding tables only
    codes = [code for code, _ in rows]
    assert len(codes) == len(set(codes)), "a code is in the findings tables twice"
    return dict(rows)


def test_every_finding_code_has_the_readme_severity():
    documented = _readme_severities()
    emitted: dict[str, set[str]] = {}
    pattern = re.compile(r'(?:code=)?"([A-Z][A-Za-z]+)",\s*(?:severity=)?"(error|warning|info)"')
    for source in Path("kubectl_dra").rglob("*.py"):
        for code, severity in pattern.findall(source.read_text()):
            emitted.setdefault(code, set()).add(severity)
    assert emitted
    for code, severities in emitted.items():
        assert code in documented, f"{code} is not in the README's findings table"
        assert severities <= documented[code], (code, severities, documented[code])
