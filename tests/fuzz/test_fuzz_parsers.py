"""Parsers fed random text: each returns a value or raises its own documented error, naming the
input; never another exception, never a hang (quantities with huge exponents, cpusets with huge
ranges)."""

from __future__ import annotations

import json
import zlib

from hypothesis import example, given
from hypothesis import strategies as st

from fuzzkit import EXAMPLE, FUZZ, FUZZ_FAST, names_one_of, run_dra, target


# --------------------------------------------------------------------------- quantities

_SUFFIXES = ["", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "e", "E", "e+",
             "e-", "i", "K", "mi", "Zi", " "]
quantity_texts = st.one_of(
    st.builds(lambda sign, whole, dot, frac, suffix, exp: f"{sign}{whole}{dot}{frac}{suffix}{exp}",
              st.sampled_from(["", "+", "-", "--", " "]), st.text("0123456789", max_size=30),
              st.sampled_from(["", ".", ".."]), st.text("0123456789", max_size=30), st.sampled_from(_SUFFIXES),
              st.one_of(st.just(""), st.integers(-10**12, 10**12).map(str))),
    st.text(max_size=40),
)


@FUZZ_FAST
@given(quantity_texts)
@target
def test_quantity_parses_or_names_the_text(text):
    """A quantity or QuantityError naming the text; what parses prints back to the same value."""
    from kubectl_dra.errors import QuantityError
    from kubectl_dra.quantity import parse_quantity

    try:
        value = parse_quantity(text)
    except QuantityError as exc:
        assert str(exc).startswith("invalid quantity") or "quantity" in str(exc), (text, str(exc))
        return
    assert parse_quantity(str(value)) == value, (text, str(value))


# --------------------------------------------------------------------------- label and field selectors

_SELECTOR_ALPHABET = st.sampled_from(list("ab=!,() ") + ["in", "notin", " in ", "==", "!=", "app", "x.y/z",
                                                           "metadata.name", "spec.nodeName", "\t", "é"])
selectors = st.one_of(st.lists(_SELECTOR_ALPHABET, max_size=16).map("".join), st.text(max_size=30))


@FUZZ_FAST
@given(selectors)
@target
def test_label_selector_parses_or_names_itself(text):
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.selectors import label_matcher, parse_label_selector

    try:
        requirements = parse_label_selector(text)
    except InputError as exc:
        assert "label selector" in str(exc), str(exc)
        return
    matches = label_matcher(text)
    assert isinstance(matches({"app": "a", "b": ""}), bool) and len(requirements) >= 0


@FUZZ_FAST
@given(selectors)
@target
def test_field_selector_parses_or_names_itself(text):
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.selectors import field_matcher, parse_field_selector

    try:
        parse_field_selector(text)
    except InputError as exc:
        assert "field selector" in str(exc), str(exc)
        return
    assert isinstance(field_matcher(text)({"metadata": {"name": "a"}, "spec": {"nodeName": None}}), bool)


@FUZZ
@given(selectors, st.sampled_from(["-l", "--selector"]))
@target
def test_selector_flag_through_the_cli(text, flag):
    """Any -l value: a listing, or a line naming the selector."""
    run = run_dra("claims", "-A", "--snapshot", EXAMPLE, flag, text)
    assert run.exit_code in (0, 2, 3), run
    names_one_of(run, "selector", flag)


@FUZZ
@given(selectors)
@target
def test_bad_label_selector_is_a_usage_error(text):
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.selectors import parse_label_selector

    try:
        parse_label_selector(text)
    except InputError:
        assert run_dra("claims", "-A", "--snapshot", EXAMPLE, "-l", text).exit_code == 2


# --------------------------------------------------------------------------- node selectors

_LABEL_VALUES = st.one_of(st.sampled_from(["1", "-1", "0", "9223372036854775808", "abc", "", " 3", "1e3", "+5",
                                           "worker-1"]), st.text(max_size=8))
_ANY = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6)),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                   max_size=3), max_leaves=6)
_OPERATORS = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte", "in", ""])
requirement = st.fixed_dictionaries(
    {}, optional={"key": st.one_of(st.sampled_from(["zone", "size", "metadata.name", ""]), _ANY),
                  "operator": st.one_of(_OPERATORS, _ANY),
                  "values": st.one_of(st.lists(_LABEL_VALUES, max_size=3), _ANY)})
node_selectors = st.one_of(
    st.fixed_dictionaries({"nodeSelectorTerms": st.lists(st.fixed_dictionaries(
        {}, optional={"matchExpressions": st.one_of(st.lists(requirement, max_size=3), _ANY),
                      "matchFields": st.one_of(st.lists(requirement, max_size=2), _ANY)}) | _ANY, max_size=3)}),
    _ANY)


@FUZZ_FAST
@given(node_selectors, st.dictionaries(st.sampled_from(["zone", "size", "x"]), _LABEL_VALUES, max_size=3))
@example({"nodeSelectorTerms": [{"matchExpressions": True}]}, {})  # found: TypeError, explain claim lost
@example({"nodeSelectorTerms": [{"matchFields": {"key": "metadata.name"}}]}, {})
@target
def test_node_selector_matches_or_is_invalid(selector, labels):
    """A ResourceSlice's nodeSelector: True/False, or NodeSelectorError naming the term."""
    from kubectl_dra.pools.nodeselector import NodeSelectorError, node_selector_matches

    try:
        assert node_selector_matches(selector, "worker-1", labels) in (True, False)
    except NodeSelectorError as exc:
        assert str(exc)


# --------------------------------------------------------------------------- CEL

_CEL_ATOMS = ['device.driver', 'device.attributes["gpu.example.com"].model', 'device.attributes["d"].index',
              'device.capacity["gpu.example.com"].memory', 'device.attributes["gpu.example.com"].driverVersion',
              'device.allowMultipleAllocations', 'quantity("1Gi")', 'quantity("x")', 'semver("1.2.3")',
              'semver("bad")', '1', '0', '-1', '9223372036854775807', '1.5', '"a"', "'gpu.example.com'", 'true',
              'null', '[1, 2, 3]', '{"a": 1}', 'device.attributes', 'x']
_CEL_OPS = ["==", "!=", "<", ">=", "&&", "||", "+", "-", "*", "/", "%", "in", ".compareTo", ".isGreaterThan",
            ".matches", ".startsWith", "."]


cel_expressions = st.one_of(
    st.recursive(st.sampled_from(_CEL_ATOMS), lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(_CEL_OPS), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}" if t[1][0] != "."
                                                              else f"{t[0]}{t[1]}({t[2]})"),
        inner.map(lambda e: f"!({e})"),
        inner.map(lambda e: f"size({e})"),
        inner.map(lambda e: f"[1, 2, 3].all(x, {e})"),
        inner.map(lambda e: f"device.attributes.exists(k, {e})"),
        inner.map(lambda e: f"[{e}, {e}].map(y, [1,2,3].map(z, y))"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}")), max_leaves=8),
    st.text(max_size=30))

_ATTRIBUTE = st.one_of(
    st.fixed_dictionaries({"int": st.one_of(st.integers(-2**70, 2**70), _ANY)}),
    st.fixed_dictionaries({"bool": st.one_of(st.booleans(), _ANY)}),
    st.fixed_dictionaries({"string": st.one_of(st.text(max_size=10), _ANY)}),
    st.fixed_dictionaries({"version": st.one_of(st.sampled_from(["1.0.0", "v1", "1.2.3-rc.1+b", "x", ""]), _ANY)}),
    _ANY)
_CAPACITY = st.one_of(st.fixed_dictionaries({"value": st.one_of(quantity_texts, _ANY)}), _ANY)
devices = st.fixed_dictionaries({
    "name": st.just("dev-0"),
    "attributes": st.dictionaries(st.sampled_from(["model", "index", "driverVersion", "d/index", "uuid"]),
                                  _ATTRIBUTE, max_size=4),
    "capacity": st.dictionaries(st.sampled_from(["memory", "cores", "gpu.example.com/memory"]), _CAPACITY,
                                max_size=2),
})


def cel_snapshot(directory, expression, device) -> None:
    """One node, one slice with ``device``, a class and a pending claim selecting with ``expression``."""
    import yaml

    objects = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1", "uid": "n1", "labels": {}},
         "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s1"},
         "spec": {"driver": "gpu.example.com", "nodeName": "worker-1",
                  "pool": {"name": "worker-1", "generation": 1, "resourceSliceCount": 1}, "devices": [device]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "c1", "namespace": "default", "uid": "c1"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": expression}}]}}]}}},
    ]
    (directory / "objects.yaml").write_text(yaml.safe_dump_all(objects))


@FUZZ_FAST
@given(cel_expressions)
@target
def test_cel_compiles_or_keeps_the_error(expression):
    from kubectl_dra.allocation.cel import Compiled, compile_selector

    compiled = compile_selector(expression)
    assert isinstance(compiled, Compiled) and (compiled.program is not None or compiled.error)


@FUZZ
@given(cel_expressions, devices)
@target
def test_cel_selector_and_device_attributes_through_explain(expression, device):
    """explain claim: any selector against any device attributes; a failing expression is that
    claim's finding (exit 0), an invalid attribute a named field (exit 4)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        cel_snapshot(Path(tmp), expression, device)
        run = run_dra("explain", "claim", "c1", "-n", "default", "--snapshot", tmp)
    assert run.exit_code in (0, 4), run
    names_one_of(run, "objects.yaml")


# --------------------------------------------------------------------------- the DRA checkpoint

_DEVICE = st.fixed_dictionaries({}, optional={"PoolName": _ANY | st.text(max_size=5),
                                              "DeviceName": _ANY | st.text(max_size=5),
                                              "RequestNames": _ANY | st.lists(st.text(max_size=3), max_size=2),
                                              "CDIDeviceIDs": _ANY | st.lists(st.text(max_size=3), max_size=2),
                                              "ShareID": _ANY})
_CLAIM = st.fixed_dictionaries({}, optional={
    "ClaimUID": _ANY | st.text(max_size=5), "ClaimName": _ANY, "Namespace": _ANY, "claimuid": _ANY,
    "PodUIDs": _ANY | st.dictionaries(st.text(max_size=4), st.just({}), max_size=2),
    "DriverState": _ANY | st.dictionaries(st.text(max_size=4), st.fixed_dictionaries(
        {}, optional={"Devices": _ANY | st.lists(_DEVICE | _ANY, max_size=2)}) | _ANY, max_size=2)})
checkpoint_data = st.one_of(
    st.fixed_dictionaries({}, optional={"kind": _ANY, "apiVersion": _ANY,
                                        "ClaimInfoStateList": _ANY | st.lists(_CLAIM | _ANY, max_size=3),
                                        "Entries": _ANY | st.lists(_CLAIM, max_size=2)}),
    _ANY)


@FUZZ_FAST
@given(checkpoint_data, st.sampled_from(["right", "wrong", "missing", "bool", "huge", "string"]),
       st.sampled_from(["Data", "data", "DATA"]))
@target
def test_dra_checkpoint_parses_or_is_refused(content, checksum_kind, data_key):
    from kubectl_dra.nodestate.checkpoint import CheckpointError, DRACheckpoint, parse_dra_checkpoint

    data = json.dumps(content)
    right = zlib.crc32(data.encode())
    envelope = {data_key: data}
    envelope.update({"right": {"Checksum": right}, "wrong": {"Checksum": right ^ 1}, "missing": {},
                     "bool": {"Checksum": True}, "huge": {"Checksum": right + (1 << 32)},
                     "string": {"Checksum": str(right)}}[checksum_kind])
    try:
        checkpoint = parse_dra_checkpoint(json.dumps(envelope).encode())
    except CheckpointError as exc:
        assert str(exc)
        return
    assert isinstance(checkpoint, DRACheckpoint) and checksum_kind == "right"


@FUZZ_FAST
@given(st.binary(max_size=200))
@target
def test_dra_checkpoint_random_bytes(blob):
    from kubectl_dra.nodestate.checkpoint import CheckpointError, parse_dra_checkpoint

    try:
        parse_dra_checkpoint(blob)
    except CheckpointError as exc:
        assert str(exc)


# --------------------------------------------------------------------------- cpu_manager_state

_CPUSETS = st.one_of(st.sampled_from(["", "0", "0-3", "0-3,8", "3-0", "a", "0-", "-1", ",", "0-3,,5", " 1 ",
                                      "0-18446744073709551616", "0-99999999999", "1-2-3"]), st.text(max_size=12))
cpu_manager_documents = st.fixed_dictionaries({}, optional={
    "policyName": st.one_of(st.sampled_from(["none", "static", ""]), _ANY),
    "defaultCpuSet": _CPUSETS | _ANY,
    "entries": st.dictionaries(st.text(max_size=4), st.dictionaries(st.text(max_size=4), _CPUSETS | _ANY,
                                                                    max_size=2) | _ANY, max_size=2) | _ANY,
    "checksum": st.integers() | _ANY})


@FUZZ_FAST
@given(cpu_manager_documents, st.booleans(), st.binary(max_size=40))
@target
def test_cpu_manager_state_read_from_a_kubelet_root(document, wrapped, garbage):
    """read_kubelet_state: a state, or a problem naming the file; never an exception."""
    import tempfile
    from pathlib import Path

    from kubectl_dra.nodescan.kubeletstate import read_kubelet_state

    text = json.dumps({"data": json.dumps(document)} if wrapped else document)
    with tempfile.TemporaryDirectory() as tmp:
        for blob in (text.encode(), garbage):
            (Path(tmp) / "cpu_manager_state").write_bytes(blob)
            state = read_kubelet_state(tmp)
            if state.cpu_manager is None and state.problems:
                assert all("cpu_manager_state" in p for p in state.problems), state.problems
            if state.cpu_manager is not None:
                for containers in state.cpu_manager.entries.values():
                    assert all(isinstance(v, str) for v in containers.values())


@FUZZ
@given(_CPUSETS)
@target
def test_cpuset_parses_or_is_none(text):
    """parse_cpuset: bounded work for any text. Run in a child with 512 MiB of address space and
    10 s: a set of 10^11 CPUs is built in C, where no alarm interrupts it and the OOM killer
    would take the test run (and the machine's other work) with it."""
    import subprocess
    import sys

    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20)); "
            "from kubectl_dra.cgroups.cpumanager import parse_cpuset; "
            "r = parse_cpuset(sys.argv[1]); assert r is None or all(0 <= c < 1 << 16 for c in r), sorted(r)[:3]")
    try:
        child = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"parse_cpuset({text!r}) still running after 10 s") from None
    assert child.returncode == 0, (text, child.stderr.strip().splitlines()[-1:])


# --------------------------------------------------------------------------- CDI specs

_CDI_DEVICE = st.one_of(st.fixed_dictionaries({"name": st.one_of(st.sampled_from(["gpu0", "gpu1", ""]), _ANY)}),
                        _ANY)
cdi_documents = st.one_of(
    st.fixed_dictionaries({}, optional={
        "cdiVersion": st.one_of(st.sampled_from(["0.6.0", "1.0.0"]), _ANY),
        "kind": st.one_of(st.sampled_from(["nvidia.com/gpu", "example.com/x", "bad", "/x", "a/"]), _ANY),
        "devices": st.one_of(st.lists(_CDI_DEVICE, max_size=3), _ANY)}),
    _ANY)


@FUZZ_FAST
@given(st.lists(st.tuples(st.integers(0, 1), st.one_of(cdi_documents.map(json.dumps), st.text(max_size=40))),
                max_size=4),
       st.sampled_from(["nvidia.com/gpu=gpu0", "example.com/x=gpu1", "bad", "a/b=", ""]))
@target
def test_cdi_specs_index_or_name_the_file(specs, wanted):
    from kubectl_dra.nodestate.cdi import build_index

    files = [(priority, f"/etc/cdi-{priority}/spec-{n}.json", text) for n, (priority, text) in enumerate(specs)]
    index = build_index(("/etc/cdi-0", "/etc/cdi-1"), sorted(files))
    assert set(index.errors) <= {path for _, path, _ in files}
    reason = index.why_unresolved(wanted)
    assert reason is None or isinstance(reason, str)
    assert (wanted in index.devices) == (reason is None), (wanted, reason)


# --------------------------------------------------------------------------- kubeconfig

kubeconfigs = st.fixed_dictionaries({}, optional={
    "apiVersion": st.just("v1") | _ANY, "kind": st.just("Config") | _ANY,
    "current-context": st.sampled_from(["c", "missing", ""]) | _ANY,
    "clusters": st.lists(st.fixed_dictionaries({"name": st.just("k") | _ANY, "cluster": st.fixed_dictionaries(
        {}, optional={"server": st.sampled_from(["https://127.0.0.1:6443", "http://[::1", "", "ftp://x", "127.0.0.1"])
                      | _ANY, "certificate-authority-data": st.sampled_from(["!!", "YQ=="]) | _ANY,
                      "insecure-skip-tls-verify": _ANY, "proxy-url": _ANY, "tls-server-name": _ANY})
        | _ANY}), max_size=2) | _ANY,
    "users": st.lists(st.fixed_dictionaries({"name": st.just("u") | _ANY, "user": st.fixed_dictionaries(
        {}, optional={"token": _ANY | st.text(max_size=5), "username": _ANY, "password": _ANY,
                      "client-certificate-data": _ANY, "client-key-data": _ANY, "exec": _ANY,
                      "auth-provider": _ANY, "as": _ANY, "as-groups": _ANY, "tokenFile": _ANY})
        | _ANY}), max_size=2) | _ANY,
    "contexts": st.lists(st.fixed_dictionaries({"name": st.just("c") | _ANY, "context": st.fixed_dictionaries(
        {}, optional={"cluster": st.just("k") | _ANY, "user": st.just("u") | _ANY,
                      "namespace": _ANY}) | _ANY}), max_size=2) | _ANY,
})


@FUZZ_FAST
@given(st.one_of(kubeconfigs.map(lambda d: __import__("yaml").safe_dump(d)), st.text(max_size=60)))
@example("contexts:\n- context:\n    user:\n    - null\n  name: c\ncurrent-context: c\n")  # found: TypeError
@example("contexts:\n- context:\n    cluster: {a: 1}\n  name: c\ncurrent-context: c\n")
@example("clusters:\n- cluster: {server: [1]}\n  name: k\ncontexts:\n- context: {cluster: k}\n  name: c\n"
         "current-context: c\n")
@example("users:\n- user: {as-groups: a}\n  name: u\ncontexts:\n- context: {user: u, cluster: k}\n  name: c\n"
         "clusters:\n- cluster: {server: 'https://x'}\n  name: k\ncurrent-context: c\n")
@target
def test_kubeconfig_loads_or_names_the_file(text):
    """A client config, or ConfigError naming the file; never another exception."""
    import tempfile
    from pathlib import Path

    from kubectl_dra.errors import DRAError
    from kubectl_dra.kube.config import load_client_config
    from kubectl_dra.kube.options import ConfigFlags

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config"
        path.write_text(text)
        try:
            load_client_config(ConfigFlags(kubeconfig=str(path)), environ={}, home=Path(tmp), service_account_dir=Path(tmp) / "none")
        except DRAError as exc:
            message = str(exc)
            assert "\n" not in message.strip(), message
            assert str(path) in message or "context" in message or "cluster" in message or "user" in message \
                or "server" in message, message


@FUZZ
@given(st.integers(1, 4), st.integers(10, 400))
@target
def test_cel_selector_past_the_cost_limit_is_that_expressions_error(depth, width):
    """Nested comprehensions of any size: the expression's own error on the node, exit 0."""
    import tempfile
    from pathlib import Path

    items = "[" + ", ".join(map(str, range(width))) + "]"
    expression = "true"
    for level in range(depth):
        expression = f"{items}.all(x{level}, {expression})"
    with tempfile.TemporaryDirectory() as tmp:
        cel_snapshot(Path(tmp), expression, {"name": "dev-0"})
        run = run_dra("explain", "claim", "c1", "-n", "default", "--snapshot", tmp)
    assert run.exit_code == 0, run
