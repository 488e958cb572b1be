"""The scheduler's bounds through the CLI (docs/kubernetes/dra-apis.md §8): a search that outlasts
the profile's filterTimeout and a selector this tool's evaluator cannot count to both end in "cannot
tell" with the scheduler's own Error as what it may say, never a verdict the scheduler would not give.
The same words come from the real scheduler in tests/cluster/test_filter_timeout.py and
tests/cluster/test_cel_cost.py."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "slow-search"
TIMEOUT = 'running "DynamicResources" filter plugin: node gpu-node-1: timed out trying to allocate devices'


def test_a_search_past_filter_timeout_is_named_with_the_scheduler_words(dra):
    began = time.monotonic()
    result = dra("explain", "pod", "wide-search", "-n", "ml", "--snapshot", str(FIXTURE / "cluster.yaml"),
                 "--scheduler-config", str(FIXTURE / "scheduler.yaml"), "-o", "json")
    assert time.monotonic() - began < 10  # two searches of 100ms; unbounded it runs for minutes
    assert result.exit_code == 0, result
    doc = result.json()
    assert doc["scheduling"]["possibleError"] == TIMEOUT and doc["scheduling"]["messageKnown"] is False
    assert doc["scheduling"]["message"] is None and doc["scheduling"]["feasibleNodes"] == []
    [node] = doc["allocation"]["nodes"]
    assert node["feasible"] is False and node["undetermined"] is None  # proven: eval has no candidate
    assert node["possibleError"] == TIMEOUT.split(": ", 1)[1] and "100ms" in node["timing"]
    assert [f["code"] for f in doc["findings"]].count("AllocationSearchSlow") == 1


def test_a_bad_filter_timeout_is_a_bad_configuration(dra, tmp_path):
    config = yaml.safe_load((FIXTURE / "scheduler.yaml").read_text())
    config["profiles"][0]["pluginConfig"][0]["args"]["filterTimeout"] = "-1s"
    (tmp_path / "scheduler.yaml").write_text(yaml.safe_dump(config))
    result = dra("explain", "pod", "wide-search", "-n", "ml", "--snapshot", str(FIXTURE / "cluster.yaml"),
                 "--scheduler-config", str(tmp_path / "scheduler.yaml"))
    assert result.exit_code == 3 and "filterTimeout \"-1s\": must be zero or positive" in result.stderr
    assert "Traceback" not in result.stderr


def _deep_selector(tmp_path) -> str:
    """The slow-search fixture with its claim's one request selecting through five nested ``all``
    (111,110 iterations: past this tool's 10,000); the snapshot's path."""
    documents = list(yaml.safe_load_all((FIXTURE / "cluster.yaml").read_text()))
    expression = 'device.driver == "gpu.example.com"'
    for level in range(5):
        expression = f"[0,1,2,3,4,5,6,7,8,9].all(x{level}, {expression})"
    for doc in documents:
        if doc["kind"] == "ResourceClaim":
            doc["spec"]["devices"]["requests"] = [{"name": "deep", "exactly": {
                "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": expression}}]}}]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(documents))
    return str(tmp_path / "cluster.yaml")


def test_a_selector_past_the_evaluator_budget_names_the_cost_error(dra, tmp_path):
    result = dra("explain", "pod", "wide-search", "-n", "ml", "--snapshot", _deep_selector(tmp_path), "-o", "json")
    assert result.exit_code == 0, result
    doc = result.json()
    words = ("claim ml/wide-search: selector #0 on device gpu.example.com/gpu-node-1/gpu-0: CEL runtime error: "
             "operation cancelled: actual cost limit exceeded")
    assert doc["scheduling"]["possibleError"] == f'running "DynamicResources" filter plugin: {words}'
    [node] = doc["allocation"]["nodes"]
    assert node["undetermined"] and "counts no cost" in node["undetermined"] and node["possibleError"] == words
    assert "Unsatisfiable" not in [f["code"] for f in doc["findings"]]


def test_a_node_without_a_verdict_is_printed_as_cannot_tell_not_as_infeasible(dra, tmp_path):
    """The text printer once showed an undetermined node as "NOT feasible: kubectl-dra cannot tell"."""
    result = dra("explain", "claim", "wide-search", "-n", "ml", "--snapshot", _deep_selector(tmp_path))
    assert result.exit_code == 0, result
    [line] = [line for line in result.stdout.splitlines() if line.strip().startswith("gpu-node-1 ")]
    assert "cannot tell" in line and "NOT feasible" not in line
