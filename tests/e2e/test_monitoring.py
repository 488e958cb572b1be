"""The monitoring component (manifests/components/monitoring): its alert rules and the dashboard's
queries checked by the real promtool (scripts/build-promtool), its unit tests (tests/monitoring)
run by promtool, its objects checked against the prometheus-operator's own CRD schemas, and every
metric and label the rules and the dashboard name found in a real running agent's /metrics.

Without promtool these tests skip, unless KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 (CI): then they fail."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from agentpods import NODE, node_pods
from builders import claim, reserved_pod
from cgroup_tree import build_tree, set_file
from httpget import get
from kubelet_files import claim_state, write_cdi_spec, write_checkpoint
from prometheus_client.parser import text_string_to_metric_families

from kubectl_dra.cgroups.options import NodeOptions
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.model.registry import parse_object
from kubectl_dra.nodescan.cgroupfs import CgroupFS
from kubectl_dra.verify.compare import UNKNOWN_CAUSES
from node_agent.publish import ERROR_STAGES
from node_agent.service import Agent, AgentConfig

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = ROOT / "manifests" / "components" / "monitoring"
UNIT_TESTS = sorted((ROOT / "tests" / "monitoring").glob("*.test.yaml"))
PROMETHEUS_VERSION, OPERATOR_VERSION = "v0.316.0", "v0.85.0"
CACHE = Path(os.environ.get("KUBECTL_DRA_CACHE", Path.home() / ".cache" / "kubectl-dra")) / f"prometheus-{PROMETHEUS_VERSION}"
CRDS = CACHE / "crds" / f"prometheus-operator-{OPERATOR_VERSION}"
REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_CONTROL_PLANE") == "1"
# labels Prometheus puts on every series of a PodMonitor target (besides the relabelings'): the
# agent never sets them; `namespace` and `pod` only where the agent does not set its own (honorLabels)
TARGET_LABELS = {"job", "instance", "container", "endpoint", "namespace", "pod"}
# The one source besides the agent: kube-state-metrics' DaemonSet series (DRANodeAgentMissing: a node
# that should run the agent and has none available, where no agent exists to report it). No agent
# scrape has them, so these names, with their labels, are all a rule or a panel may name that the
# agent does not emit: kube-state-metrics' stable DaemonSet metrics
# (kubernetes/kube-state-metrics docs/metrics/workload/daemonset-metrics.md), each labelled
# namespace and daemonset. The labels its ServiceMonitor target adds, as kube-prometheus-stack
# scrapes it (honorLabels: the DaemonSet's namespace wins over kube-state-metrics' own):
KUBE_STATE_METRICS = {name: {"namespace", "daemonset"} for name in (
    "kube_daemonset_status_desired_number_scheduled", "kube_daemonset_status_number_available")}
KUBE_STATE_METRICS_TARGET_LABELS = {"job", "instance", "container", "endpoint", "service", "pod"}


def _need(path: Path, what: str) -> Path:
    if path.exists():
        return path
    message = f"{what} missing at {path}: run scripts/build-promtool (needs Go and the Go module proxy)"
    if REQUIRED:
        pytest.fail(f"KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 but {message}")
    pytest.skip(message)


@pytest.fixture(scope="module")
def promtool() -> str:
    return str(_need(CACHE / "bin" / "promtool", "promtool"))


def rule_object() -> dict:
    return yaml.safe_load((COMPONENT / "prometheusrule.yaml").read_text())


def rules() -> list[dict]:
    return [r for g in rule_object()["spec"]["groups"] for r in g["rules"]]


def dashboard() -> dict:
    return json.loads((COMPONENT / "dashboard.json").read_text())


def dashboard_exprs() -> list[str]:
    exprs = [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]
    # a variable's label_values(metric, label), as the query that needs both
    exprs += [re.sub(r"^label_values\((.*), *(\w+)\)$", r"max by (\2) (\1)", v["query"]["query"])
              for v in dashboard()["templating"]["list"] if v["type"] == "query"]
    return exprs


def concrete(expr: str) -> str:
    """A dashboard query as Prometheus receives it: Grafana's variables filled in."""
    return expr.replace("$__rate_interval", "5m").replace("$node", ".*")


def write_rules(directory: Path) -> Path:
    """The PrometheusRule's spec.groups as a plain rule file: what the operator hands Prometheus."""
    path = directory / "dra-node-agent.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule_object()["spec"]["groups"]}, sort_keys=False))
    return path


def unknown_verdict_causes() -> set[str]:
    """The causes that make a pod Unknown rather than Diverged: kubectl_dra.verify.compare's
    UNKNOWN_CAUSES (a cgroup or file missing or unreadable, an invalid field), and the cause a cgroup
    root the agent cannot scan gives every pod (kubectl_dra.nodescan.scan): cgroup v1 or hybrid is
    CgroupUnsupported, a missing or foreign root CgroupMissing."""
    causes = set(UNKNOWN_CAUSES)
    with tempfile.TemporaryDirectory() as tmp:
        v1, hybrid, empty, missing = (Path(tmp) / name for name in ("v1", "hybrid", "empty", "missing"))
        (v1 / "memory").mkdir(parents=True)
        (hybrid / "unified").mkdir(parents=True)
        (hybrid / "unified" / "cgroup.controllers").write_text("cpu memory\n")
        empty.mkdir()
        for root in (v1, hybrid, empty, missing):
            causes.add(CgroupFS(root).unusable()[0])
    return causes


def promtool_run(promtool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


# -- promtool ------------------------------------------------------------------------------------

def test_the_rules_pass_promtool_check_rules(promtool, tmp_path):
    path = write_rules(tmp_path)
    result = promtool_run(promtool, "check", "rules", "--lint=all", "--lint-fatal", path.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules())} rules found" in result.stdout


def test_promtool_check_rules_catches_a_broken_rule(promtool, tmp_path):
    """The check is real: a typo in an expression or a template is refused."""
    broken = rule_object()["spec"]["groups"]
    broken[0]["rules"][0]["expr"] = "max by (node (dra_agent_pods)"
    broken[0]["rules"][1]["annotations"]["summary"] = "{{ $labels.node }"
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump({"groups": broken}))
    result = promtool_run(promtool, "check", "rules", "broken.yaml", cwd=tmp_path)
    said = result.stderr + result.stdout
    assert result.returncode != 0 and "could not parse expression" in said and 'unexpected "}"' in said


def test_the_promtool_unit_tests_pass(promtool, tmp_path):
    write_rules(tmp_path)
    for test in UNIT_TESTS:
        shutil.copy(test, tmp_path / test.name)
    result = promtool_run(promtool, "test", "rules", *(t.name for t in UNIT_TESTS), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(UNIT_TESTS)


def test_the_promtool_unit_tests_fail_on_a_wrong_rule(promtool, tmp_path):
    """Each alert's cases decide: dropping the "info" filter, or the for: duration, breaks them."""
    for test in UNIT_TESTS:
        shutil.copy(test, tmp_path / test.name)
    for mutate in (lambda r: r.update(expr=r["expr"].replace('severity!="info", ', "")),
                   lambda r: r.pop("for")):
        groups = rule_object()["spec"]["groups"]
        mutate(groups[0]["rules"][0])
        (tmp_path / "dra-node-agent.rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
        result = promtool_run(promtool, "test", "rules", *(t.name for t in UNIT_TESTS), cwd=tmp_path)
        assert result.returncode != 0 and "DRAEnforcementDiverged" in result.stdout + result.stderr


def unit_cases() -> list[tuple[str, int, list]]:
    """(alertname, eval_time, exp_alerts) of every alert_rule_test in tests/monitoring."""
    return [(case["alertname"], case["eval_time"], case.get("exp_alerts") or [])
            for test in UNIT_TESTS for group in yaml.safe_load(test.read_text())["tests"]
            for case in group.get("alert_rule_test", [])]


def test_every_alert_has_a_firing_and_a_not_firing_case():
    cases = unit_cases()
    for rule in rules():
        name = rule["alert"]
        assert any(n == name and exp for n, _, exp in cases), f"{name}: no case where it fires"
        assert any(n == name and not exp for n, _, exp in cases), f"{name}: no case where it does not"
        for n, _, exp in cases:  # a firing case names the command to run, rendered for the alert's labels
            for alert in exp if n == name else ():
                assert "kubectl " in alert["exp_annotations"]["description"], (name, alert)


def test_the_dashboard_queries_pass_promtool(promtool, tmp_path):
    """Every panel and variable query, with Grafana's variables filled in, as recording rules."""
    exprs = dashboard_exprs()
    rule_file = {"groups": [{"name": "dashboard", "rules": [{"record": f"dashboard:query_{i}", "expr": concrete(e)}
                                                          for i, e in enumerate(exprs)]}]}
    (tmp_path / "dashboard.rules.yaml").write_text(yaml.safe_dump(rule_file))
    result = promtool_run(promtool, "check", "rules", "dashboard.rules.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in result.stdout


# -- the objects against the prometheus-operator's CRDs -------------------------------------------

def schema_errors(value, schema: dict, path: str = "") -> list[str]:
    """Field names and types against a CRD's structural schema: the API server would prune (and the
    operator ignore) a misspelled field silently, so a typo is an error here."""
    errors = []
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        return [] if isinstance(value, (int, str)) else [f"{path}: not an int or string"]
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties")
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}.{key}: required")
        for key, item in value.items():
            if props is not None and key in props:
                errors += schema_errors(item, props[key], f"{path}.{key}")
            elif "additionalProperties" in schema and isinstance(schema["additionalProperties"], dict):
                errors += schema_errors(item, schema["additionalProperties"], f"{path}.{key}")
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{path}.{key}: no such field")
    elif kind == "array" and isinstance(value, list):
        errors += [e for i, item in enumerate(value) for e in schema_errors(item, schema.get("items", {}), f"{path}[{i}]")]
    elif kind in ("object", "array") or (kind == "string" and not isinstance(value, str)) \
            or (kind == "boolean" and not isinstance(value, bool)) or (kind == "integer" and not isinstance(value, int)):
        errors.append(f"{path}: expected {kind}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not one of {schema['enum']}")
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    return errors


@pytest.mark.parametrize("file,crd", [("podmonitor.yaml", "monitoring.coreos.com_podmonitors.yaml"),
                                      ("prometheusrule.yaml", "monitoring.coreos.com_prometheusrules.yaml")])
def test_the_objects_fit_the_prometheus_operator_crds(file, crd):
    spec = yaml.safe_load(_need(CRDS / crd, "the prometheus-operator CRDs").read_text())
    obj = yaml.safe_load((COMPONENT / file).read_text())
    assert (obj["apiVersion"], obj["kind"]) == (f"{spec['spec']['group']}/v1", spec["spec"]["names"]["kind"])
    [version] = [v for v in spec["spec"]["versions"] if v["name"] == "v1"]
    schema = version["schema"]["openAPIV3Schema"]
    assert schema_errors(obj["spec"], schema["properties"]["spec"], "spec") == []
    wrong = dict(obj["spec"], **({"podMetricEndpoints": []} if file == "podmonitor.yaml" else {"group": []}))
    assert schema_errors(wrong, schema["properties"]["spec"], "spec")  # the check sees a misspelled field


def test_the_pod_monitor_scrapes_the_agents_metrics_port():
    monitor = yaml.safe_load((COMPONENT / "podmonitor.yaml").read_text())
    daemonset = yaml.safe_load((ROOT / "manifests" / "agent" / "daemonset.yaml").read_text())
    template = daemonset["spec"]["template"]
    [container] = template["spec"]["containers"]
    listen = next(a for a in container["args"] if a.startswith("--listen=")).rpartition(":")[2]
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    port = next(p for p in container["ports"] if p["name"] == endpoint["port"])
    assert str(port["containerPort"]) == listen and endpoint["path"] == "/metrics"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [daemonset["metadata"]["namespace"]]
    # the agent's namespace/pod labels (the diverged workload pod) must win over the target's
    assert endpoint["honorLabels"] is True


def up_labels() -> dict[str, str]:
    """The labels `up` gets from the PodMonitor: job from jobLabel, node from the relabeling."""
    monitor = yaml.safe_load((COMPONENT / "podmonitor.yaml").read_text())
    template = yaml.safe_load((ROOT / "manifests" / "agent" / "daemonset.yaml").read_text())["spec"]["template"]
    labels = {"job": template["metadata"]["labels"][monitor["spec"]["jobLabel"]]}
    for relabel in monitor["spec"]["podMetricsEndpoints"][0]["relabelings"]:
        if relabel["sourceLabels"] == ["__meta_kubernetes_pod_node_name"] and relabel.get("action", "replace") == "replace":
            labels[relabel["targetLabel"]] = "<node>"
    return labels


def test_the_rules_select_up_by_the_labels_the_pod_monitor_gives_it():
    labels = up_labels()
    assert labels == {"job": "dra-node-agent", "node": "<node>"}
    for rule in rules():
        for job in re.findall(r'up\{job="([^"]*)"\}', rule["expr"]):
            assert job == labels["job"], rule["alert"]


def test_the_causes_that_mean_unknown():
    """What the alerts below rely on: a cgroup v1 node makes every pod Unknown too."""
    assert unknown_verdict_causes() == set(UNKNOWN_CAUSES) | {"CgroupUnsupported"}


def test_the_diverged_alert_leaves_out_exactly_the_causes_that_mean_unknown():
    """Unreadable cgroups (or a cgroup v1 node) make a pod Unknown, not Diverged."""
    [rule] = [r for r in rules() if r["alert"] == "DRAEnforcementDiverged"]
    [causes] = re.findall(r'cause!~"([^"]*)"', rule["expr"])
    assert set(causes.split("|")) == unknown_verdict_causes()


def test_the_unknown_alert_takes_exactly_the_pods_the_agent_calls_unknown():
    """A pod with one of those causes and no real divergence (compare_pod: error or warning, another
    cause), per pod and cause like DRAEnforcementDiverged."""
    [rule] = [r for r in rules() if r["alert"] == "DRAPodVerdictUnknown"]
    [unknown] = re.findall(r'cause=~"([^"]*)"', rule["expr"])
    [diverged] = re.findall(r'cause!~"([^"]*)"', rule["expr"])
    assert set(unknown.split("|")) == set(diverged.split("|")) == unknown_verdict_causes()
    assert 'unless on (node, namespace, pod)' in rule["expr"] and 'severity!="info"' in rule["expr"]


def test_the_daemonset_alert_watches_the_agents_daemonset():
    """DRANodeAgentMissing selects the DaemonSet of manifests/agent by namespace and name, and the
    commands in its description find that DaemonSet's pods."""
    daemonset = yaml.safe_load((ROOT / "manifests" / "agent" / "daemonset.yaml").read_text())
    [rule] = [r for r in rules() if r["alert"] == "DRANodeAgentMissing"]
    selectors, _ = references(rule["expr"])
    assert {m for m, _ in selectors} == set(KUBE_STATE_METRICS)
    for metric in KUBE_STATE_METRICS:
        assert f'{metric}{{namespace="{daemonset["metadata"]["namespace"]}", daemonset="{daemonset["metadata"]["name"]}"}}' \
            in rule["expr"]
    selector = ",".join(f"{k}={v}" for k, v in daemonset["spec"]["selector"]["matchLabels"].items())
    assert f"-l {selector}`" in rule["annotations"]["description"]
    # the for: outlasts a rollout: maxUnavailable 10% is about 10 waves of one agent restart each
    assert daemonset["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == "10%"
    assert rule["for"] == "30m"


def test_the_dashboard_is_a_grafana_dashboard_on_a_datasource_variable():
    board = dashboard()
    assert board["uid"] and board["title"] and isinstance(board["schemaVersion"], int) and board["schemaVersion"] >= 36
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert {"h", "w", "x", "y"} <= panel["gridPos"].keys() and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        assert panel["targets"] and all(t["refId"] and t["expr"] for t in panel["targets"])
    titles = {p["title"] for p in board["panels"]}
    assert {"Pods by verdict", "Divergences by cause", "Claim findings", "Scan duration p95", "Scan errors",
            "Last scan age", "Build info", "API watches open", "API lists per hour"} <= titles
    # counters (dra_agent_api_lists counts since the agent started) are shown as rates, never raw
    for metric in ("dra_agent_scan_errors_total", "dra_agent_api_lists"):
        exprs = [e for e in dashboard_exprs() if metric in e]
        assert exprs and all(re.search(r"\b(rate|increase)\(" + metric + r"\{", e) for e in exprs), metric


@pytest.mark.kubectl
def test_the_component_renders_with_the_agent(tmp_path):
    """`kubectl kustomize` of the agent plus the component: the two monitoring objects and the
    dashboard ConfigMap, whose JSON is dashboard.json byte for byte."""
    from k8s_build import kubectl_path

    kubectl = kubectl_path()
    if kubectl is None:
        (pytest.fail if REQUIRED else pytest.skip)("no kubectl: neither the built v1.37.2 one (scripts/build-control-plane) "
                                                   "nor one on PATH")
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(ROOT / "manifests" / "agent", overlay)],
        "components": [os.path.relpath(COMPONENT, overlay)]}))
    result = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    objects = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(result.stdout) if d}
    assert ("PodMonitor", "dra-node-agent") in objects and ("PrometheusRule", "dra-node-agent") in objects
    config_map = objects[("ConfigMap", "dra-node-agent-dashboard")]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["namespace"] == "kubectl-dra-system"
    assert config_map["data"]["dra-node-agent.json"] == (COMPONENT / "dashboard.json").read_text()


# -- a real agent's /metrics ---------------------------------------------------------------------

FUNCTIONS = {"max", "min", "sum", "count", "avg", "rate", "increase", "irate", "time", "histogram_quantile",
             "absent", "label_values", "topk", "bottomk", "clamp_min", "vector", "scalar", "delta", "deriv"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
            "offset", "inf", "nan"}
TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[[^\]]*\]|[A-Za-z_:][A-Za-z0-9_:]*|\{|\}|\(|\)|,|[^\s]')


def references(expr: str) -> tuple[list[tuple[str, set[str]]], set[str]]:
    """The metric selectors of a PromQL expression, each with the label names its matchers use, and
    the label names its grouping clauses (by, on, ...) use."""
    tokens = TOKEN.findall(expr)
    selectors, grouping, i = [], set(), 0
    while i < len(tokens):
        token = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in ("by", "without", "on", "ignoring", "group_left", "group_right") and following == "(":
            end = tokens.index(")", i)
            grouping |= {t for t in tokens[i + 2:end] if t != ","}
            i = end + 1
            continue
        if re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", token) and token not in KEYWORDS:
            if following in ("(", "by", "without"):  # a function or an aggregation: max by (...) (...)
                assert token in FUNCTIONS, f"{token}: not a function this check knows: {expr}"
            else:
                matchers = set()
                if following == "{":
                    end = tokens.index("}", i)
                    matchers = {tokens[j] for j in range(i + 2, end)  # name, then = != =~ !~ (one char a token)
                                if re.fullmatch(r"[A-Za-z_]\w*", tokens[j]) and tokens[j + 1] in ("=", "!")}
                    i = end
                selectors.append((token, matchers))
        i += 1
    return selectors, grouping


def test_references_reads_selectors_and_grouping():
    """The extractor the scrape test relies on."""
    assert references('max by (node, le) (rate(a_bucket{node=~"$node", x!="1"}[5m])) and on (node) b') == (
        [("a_bucket", {"node", "x"}), ("b", set())], {"node", "le"})
    assert references("time() - max by (node) (c) > 300") == ([("c", set())], {"node"})


@pytest.fixture
def real_agent(tmp_path, make_apiserver, kubeconfig_for):
    """The agent service on a cgroup tree with one planted divergence, one pod whose container cgroup
    is gone (Unknown), a kubelet checkpoint and CDI specs with one claim's spec deleted under its
    running pod (a claim finding), publishing to the API server: every metric has at least one series."""
    pods = node_pods()
    raw = [p.raw for p in pods]
    trainer = next(p for p in raw if p["metadata"]["name"] == "burstable")
    gpu = claim("x", devices=[("gpu.example.com", NODE, "gpu-0")], node=NODE, reserved_for=[reserved_pod(trainer)])
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "node-uid-1"}, "status": {}}
    dirs = build_tree(tmp_path / "sys", [parse_object(p) for p in raw], NodeOptions(hugepage_sizes=[2 << 20, 1 << 30]))
    set_file(dirs[("burstable", "encoder")], "memory.max", str(8 << 30))  # the planted divergence
    shutil.rmtree(dirs[("besteffort", "shell")])  # its cgroup gone: the pod is Unknown
    for (name, container), directory in dirs.items():
        if name == "burstable" and container:
            (directory / "cgroup.procs").write_text("4242\n")  # its sandbox runs
    kubelet = tmp_path / "kubelet"
    write_checkpoint(kubelet, [claim_state(gpu, [trainer["metadata"]["uid"]])])
    cdi = tmp_path / "cdi"
    write_cdi_spec(cdi, "other.json", "example.com/other", ["nic-0"])  # gpu-0's spec is gone
    server = make_apiserver(raw + [node, gpu], served={"kubectl-dra.io": ["v1alpha1"]})
    config = AgentConfig(node=NODE, cgroup_root=str(tmp_path / "sys" / "fs" / "cgroup"), listen="127.0.0.1:0",
                         interval=60, kubelet_root=str(kubelet), cdi_dirs=(str(cdi),))
    agent = Agent(config, KubeOptions(kubeconfig=str(kubeconfig_for(server))))
    agent.connect()
    base = "http://127.0.0.1:%d" % agent.start_http().server_address[1]
    report = agent.scan_once()
    yield agent, base, report
    agent.server.shutdown()


def scraped(base: str) -> dict[str, list[dict[str, str]]]:
    """/metrics as Prometheus reads it: sample name -> the label sets of its series."""
    code, text = get(base + "/metrics")
    assert code == 200
    series: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, []).append(sample.labels)
    return series


def unknown_references(exprs: list[tuple[str, str]], names: dict[str, set[str]]) -> list[str]:
    """What the expressions name that the scrape lacks: metrics, matcher labels, and grouping labels
    (a by/on label absent from a selected metric would silently merge its series)."""
    missing = []
    for where, expr in exprs:
        selectors, grouping = references(expr)
        assert selectors, where
        for metric, matchers in selectors:
            if metric not in names:
                missing.append(f"{where}: metric {metric}")
                continue
            missing += [f"{where}: label {label} on {metric}" for label in sorted(matchers - names[metric])]
            missing += [f"{where}: by/on label {label} on {metric}" for label in sorted(grouping - names[metric])]
    return missing


def test_every_metric_and_label_the_rules_and_the_dashboard_name_is_in_a_real_scrape(real_agent):
    agent, base, report = real_agent
    assert report.status.summary.diverged == 1 and report.status.summary.claim_findings >= 1
    series = scraped(base)
    names = {name: set().union(*(set(s) for s in sets)) for name, sets in series.items()}
    names["up"] = set(up_labels())  # made by Prometheus from the PodMonitor, checked above
    assert not set(KUBE_STATE_METRICS) & set(names)  # the listed ones never stand in for an agent metric
    allowed = {**names, **KUBE_STATE_METRICS}
    exprs = [(r["alert"], r["expr"]) for r in rules()] + [(f"dashboard: {e}", concrete(e)) for e in dashboard_exprs()]
    assert unknown_references(exprs, allowed) == []
    # the list holds only what a rule or a panel uses
    assert set(KUBE_STATE_METRICS) <= {metric for _, e in exprs for metric, _ in references(e)[0]}
    # the check itself: a misspelled label, a label the metric lacks, a metric that does not exist
    # (the agent's, or a kube-state-metrics one misspelled or given a label it lacks)
    assert unknown_references([("a", 'dra_agent_pods{pod_name="x"}'), ("b", "sum by (namespace) (dra_agent_pods)"),
                               ("c", "time() - dra_agent_last_scrape_timestamp_seconds"),
                               ("d", "max by (node) (dra_agent_api_list)"),
                               ("e", 'kube_daemonset_status_number_availabe{daemonset="dra-node-agent"}'),
                               ("f", 'kube_daemonset_status_number_available{ds="dra-node-agent"}'),
                               ("g", "max by (node) (kube_daemonset_status_desired_number_scheduled)")], allowed) == [
        "a: label pod_name on dra_agent_pods", "b: by/on label namespace on dra_agent_pods",
        "c: metric dra_agent_last_scrape_timestamp_seconds", "d: metric dra_agent_api_list",
        "e: metric kube_daemonset_status_number_availabe", "f: label ds on kube_daemonset_status_number_available",
        "g: by/on label node on kube_daemonset_status_desired_number_scheduled"]


def test_the_promtool_unit_tests_feed_series_shaped_as_the_agent_emits_them(real_agent):
    """Every input series has exactly the scraped metric's label names (plus target labels), and
    its enumerated label values are ones the agent emits."""
    from typing import get_args, get_type_hints

    from kubectl_dra.verify.report import NodeSource, Severity, Verdict

    agent, base, _ = real_agent
    series = scraped(base)
    names = {name: set().union(*(set(s) for s in sets)) for name, sets in series.items()}
    values = {"verdict": set(get_args(Verdict)), "severity": set(get_args(Severity)), "stage": set(ERROR_STAGES),
              "source": set(get_args(get_type_hints(NodeSource)["name"]))}
    checked = 0
    for test in UNIT_TESTS:
        for group in yaml.safe_load(test.read_text())["tests"]:
            for item in group["input_series"]:
                metric, _, body = item["series"].partition("{")
                labels = dict(re.findall(r'(\w+)="([^"]*)"', body))
                if metric == "up":
                    assert set(up_labels()) <= set(labels) <= set(up_labels()) | TARGET_LABELS, item["series"]
                    continue
                if metric in KUBE_STATE_METRICS:  # not the agent's: its documented labels, and its target's
                    assert set(labels) - KUBE_STATE_METRICS_TARGET_LABELS == KUBE_STATE_METRICS[metric], item["series"]
                    assert labels["job"] == "kube-state-metrics", item["series"]
                    continue
                assert metric in names, f"{metric}: not in the agent's /metrics"
                assert set(labels) - (TARGET_LABELS - names[metric]) == names[metric], item["series"]
                for label, allowed in values.items():
                    if label in labels:
                        assert labels[label] in allowed, item["series"]
                checked += 1
    assert checked >= 10


def render(template: str, labels: dict[str, str], value: float) -> str:
    """The two template forms the annotations use, as Prometheus fills them in."""
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], template)
    text = text.replace("{{ $value }}", f"{value:g}")
    assert "{{" not in text, text
    return text


def test_the_alerts_fire_on_a_real_agents_series_and_only_where_they_should(promtool, real_agent, tmp_path):
    """A real agent's whole scrape (a diverged pod, an Unknown pod, a claim finding, a healthy scan
    and write) fed to promtool as it would reach Prometheus through the PodMonitor: the divergence,
    the Unknown pod and the finding alert with their real labels, and nothing else does (no
    kube-state-metrics series: DRANodeAgentMissing stays quiet)."""
    agent, base, report = real_agent
    code, text = get(base + "/metrics")
    target = {"job": "dra-node-agent", "instance": "10.244.1.7:8080", "container": "agent", "endpoint": "http",
              "namespace": "kubectl-dra-system", "pod": "dra-node-agent-4xk2p", "node": NODE}
    inputs = [{"series": 'up{%s}' % ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(target.items())),
               "values": "1x40"}]
    divergences, findings = [], []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = {**target, **sample.labels}  # honorLabels: the agent's own labels win
            timestamp = sample.name.endswith("_timestamp_seconds")
            inputs.append({"series": "%s{%s}" % (sample.name, ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items()))),
                           # a timestamp follows the evaluation clock (one scan and write a minute)
                           "values": "0+60x40" if timestamp else f"{sample.value:g}x40"})
            if sample.name == "dra_agent_pod_divergences":
                divergences.append((sample.labels, sample.value))
            elif sample.name == "dra_agent_claim_findings":
                findings.append((sample.labels, sample.value))
    rule = {r["alert"]: r for r in rules()}

    unknown_causes = unknown_verdict_causes()
    # the pods the agent's own report calls Unknown, and the causes that made them so
    unknown_pods = {(p.namespace, p.name): {d.cause for d in p.divergences if d.cause in unknown_causes}
                    for p in report.status.pods if p.verdict == "Unknown"}
    assert report.status.summary.unknown == len(unknown_pods) == 1  # the planted one

    def expected(alert: str, samples, keys, keep) -> list[dict]:
        groups: dict[tuple, float] = {}
        for labels, value in samples:
            if not keep(labels):
                continue
            key = tuple(labels[k] for k in keys)
            groups[key] = max(groups.get(key, value), value)
        alerts = []
        for key, value in groups.items():
            labels = dict(zip(keys, key))
            annotations = {k: render(v, labels, value) for k, v in rule[alert]["annotations"].items()}
            alerts.append({"exp_labels": {**labels, "severity": "critical" if labels.get("severity") == "error" else "warning"},
                           "exp_annotations": annotations})
        return alerts

    def real(labels) -> bool:
        return labels["severity"] != "info" and labels.get("cause") not in unknown_causes

    firing = {"DRAEnforcementDiverged": expected("DRAEnforcementDiverged", divergences,
                                                ("node", "namespace", "pod", "cause", "severity"), real),
              "DRAPodVerdictUnknown": expected("DRAPodVerdictUnknown", divergences, ("node", "namespace", "pod", "cause"),
                                               lambda labels: labels["cause"] in unknown_pods.get(
                                                   (labels["namespace"], labels["pod"]), ())),
              "DRAClaimFindings": expected("DRAClaimFindings", findings, ("node", "namespace", "claim", "code", "severity"), real)}
    assert firing["DRAEnforcementDiverged"] and firing["DRAPodVerdictUnknown"] and firing["DRAClaimFindings"]
    # past every for: (30 minutes at most), the series held for 40
    cases = [{"eval_time": "35m", "alertname": name, "exp_alerts": firing.get(name, [])} for name in rule]
    write_rules(tmp_path)
    (tmp_path / "real.test.yaml").write_text(yaml.safe_dump({
        "rule_files": ["dra-node-agent.rules.yaml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": inputs, "alert_rule_test": cases}]}, sort_keys=False, width=1000))
    result = promtool_run(promtool, "test", "rules", "real.test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
