"""Snapshot files fed to every command: the example cluster's objects with random fields replaced
by values of random types, laid out as one object per file, ``kind: List`` files, multi-document
YAML or JSON. Whatever the shape, the command prints what is still true and names the file and
field it could not use (exit 4), or says why nothing can be shown (exit 3), never a traceback."""

from __future__ import annotations

import copy
import json
import math
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, note
from hypothesis import strategies as st

from fuzzkit import EXAMPLE, FUZZ, names_one_of, paths, run_dra, target


def _example_objects() -> list[dict]:
    from kubectl_dra.kube.snapshot import _flatten, read_documents, snapshot_files
    from kubectl_dra.model.inventory import Inventory

    return [obj for file in snapshot_files(Path(EXAMPLE)) for doc in read_documents(file)
            for obj in _flatten(doc, str(file), Inventory())]


OBJECTS = _example_objects()
KNOWN_ELSEWHERE = {"InstanceTypeCatalog", "DeviceTaintRule"}  # their own targets below
MUTABLE = [i for i, obj in enumerate(OBJECTS) if obj.get("kind") not in KNOWN_ELSEWHERE]


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([0, -1, 2**63, -2**63 - 1]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1.5, -0.0, 1e308]),
    st.text(max_size=12),
    st.sampled_from(["", "abc", "1", "-1", "1Gi", "500m", "1e3", "9223372036854775808", "2026-11-22T12:00:00Z",
                     "not-a-date", "max", "None", "Evict", "NoSchedule", "In", "Gt", "v1", "resource.k8s.io/v1",
                     "gpu.example.com", "worker-gpu-1", "default", "\x1b[31m", "a\nb", "ü"]))
VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["name", "key", "value", "kind", "items", "x", ""]), inner,
                                        max_size=3), max_leaves=6)


@st.composite
def mutated_objects(draw, candidates=tuple(MUTABLE), max_mutations=4):
    objects, mutations = copy.deepcopy(OBJECTS), []
    for _ in range(draw(st.integers(1, max_mutations))):
        obj = objects[draw(st.sampled_from(candidates))]
        path = draw(st.sampled_from(list(paths(obj))[1:]))
        parent = obj
        for step in path[:-1]:
            parent = parent[step]
        meta = obj.get("metadata")
        where = f"{obj.get('kind')} {meta.get('name') if isinstance(meta, dict) else meta}: {'.'.join(map(str, path))}"
        if isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
            del parent[path[-1]]
            mutations.append(f"{where} deleted")
        else:
            parent[path[-1]] = draw(VALUES)
            mutations.append(f"{where} = {parent[path[-1]]!r}")
    note("mutations: " + "; ".join(mutations))  # the minimal input, readable (the objects are long)
    return objects


def _plain(value):
    """YAML cannot say inf/nan as JSON does; keep values JSON-able for the .json layout."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def write_snapshot(directory: Path, objects: list, layout: str) -> list[str]:
    """Write ``objects`` in one of the accepted layouts; the names of the files written."""
    names = []
    if layout == "list":
        names.append("all.yaml")
        (directory / "all.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    elif layout == "documents":
        names.append("all.yaml")
        (directory / "all.yaml").write_text(yaml.safe_dump_all(objects))
    else:
        for n, obj in enumerate(objects):
            name = f"object-{n}.{'json' if layout == 'json' else 'yaml'}"
            names.append(name)
            text = json.dumps(obj) if layout == "json" else yaml.safe_dump(obj)
            (directory / name).write_text(text)
    return names


COMMANDS = [
    ("claims", "-A"), ("claims", "-A", "-o", "json"), ("claims", "-A", "-o", "wide"), ("taints",),
    ("overlays",), ("overlays", "-o", "json"), ("verify",), ("verify", "-o", "json"),
    ("explain", "node", "worker-gpu-1"), ("explain", "node", "worker-cpu-1"),
    ("explain", "claim", "llm-70b-gpu-x7k2p", "-n", "ml"), ("explain", "pod", "llm-70b", "-n", "ml"),
    ("explain", "claim", "shared-gpu", "-n", "ml"), ("explain", "pod", "trainer-0", "-n", "ml"),
]
EXITS = {"claims": {0, 3, 4}, "taints": {0, 1, 3, 4}, "overlays": {0, 3, 4}, "verify": {0, 1, 3, 4},
         "explain": {0, 3, 4}}


def check_snapshot_run(objects, layout, command, extra_files=()):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        names = write_snapshot(directory, objects, layout)
        for name, text in extra_files:
            (directory / name).write_text(text)
            names.append(name)
        run = run_dra(*command, "--snapshot", tmp)
    assert run.exit_code in EXITS[command[0]], run
    names_one_of(run, tmp, *names, "not found")
    return run


@FUZZ
@given(mutated_objects(), st.sampled_from(["list", "documents", "files", "json"]), st.sampled_from(COMMANDS))
@target
def test_snapshot_with_random_field_types(objects, layout, command):
    check_snapshot_run([_plain(o) for o in objects], layout, command)


GARBAGE_FILES = st.sampled_from([
    ("bad.yaml", "kind: Pod\nmetadata: {name: [\n"), ("bad.json", "{\"kind\": "), ("tab.yaml", "a:\n\t- b\n"),
    ("bom.yaml", "\ufeffkind: Pod\n"), ("nul.yaml", "kind: Pod\x00\n"), ("alias.yaml", "a: &x [*x]\n"),
    ("anchors.yaml", "a: &a [1]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\n"),
    ("unknown.yaml", "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n"),
    ("tagged.yaml", "!!python/object:os.system {}\n"), ("binary.yaml", "kind: !!binary aGk=\n"),
    ("empty.yaml", ""), ("comment.yaml", "# nothing\n"), ("null.yaml", "null\n"),
    ("deep.yaml", "[" * 5000 + "]" * 5000 + "\n"),
])


@FUZZ
@given(GARBAGE_FILES, st.sampled_from(COMMANDS))
@target
def test_snapshot_with_a_malformed_file_beside_good_ones(garbage, command):
    """A directory: the bad file is named on stderr, the rest still shown (exit 4), never a crash."""
    check_snapshot_run(OBJECTS, "files", command, [garbage])


@FUZZ
@given(st.sampled_from(["42\n", "[1, 2]\n", "metadata: {name: x}\n", "kind: List\nitems: {a: 1}\n",
                        "kind: PodList\nitems: 3\n", "kind: 7\n"]), st.sampled_from(COMMANDS))
@target
def test_snapshot_file_that_is_not_an_object_is_named(text, command):
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "odd.yaml").write_text(text)
        run = run_dra(*command, "--snapshot", str(Path(tmp) / "odd.yaml"))
        assert run.exit_code == 3 and "odd.yaml" in run.stderr, run
        write_snapshot(Path(tmp), OBJECTS, "files")
        run = run_dra(*command, "--snapshot", tmp)
        assert run.exit_code in (1, 3, 4) and "odd.yaml" in run.stderr, run


CATALOG = [i for i, obj in enumerate(OBJECTS) if obj.get("kind") == "InstanceTypeCatalog"]


@FUZZ
@given(mutated_objects(tuple(CATALOG)), st.sampled_from([c for c in COMMANDS if c[0] in ("overlays", "explain")]))
@target
def test_snapshot_catalog_with_random_field_types(objects, command):
    check_snapshot_run(objects, "files", command)


# minimal inputs the properties above found, kept as fixed cases: (kind, name, path, value)
FOUND = [
    ("ResourceClaim", "risk-engine-cpus", ("status", "allocation", "nodeSelector", "nodeSelectorTerms"), True),
    ("ResourceClaim", "risk-engine-cpus", ("status", "allocation", "nodeSelector", "nodeSelectorTerms", 0,
                                           "matchFields"), {"key": "metadata.name"}),
    ("ResourceClaim", "risk-engine-cpus", ("status", "allocation", "nodeSelector", "nodeSelectorTerms", 0,
                                           "matchFields", 0, "values"), "worker-cpu-1"),
    ("ResourceSlice", None, ("spec", "nodeSelector"), {"nodeSelectorTerms": [{"matchExpressions": True}]}),
]


@pytest.mark.parametrize("kind, name, path, value", FOUND)
@pytest.mark.parametrize("command", [("claims", "-A"), ("explain", "claim", "risk-engine-cpus", "-n", "default"),
                                     ("explain", "node", "worker-cpu-1"), ("verify",)])
def test_found_by_fuzzing(kind, name, path, value, command):
    """Each was an "unexpected TypeError ... (this is a bug)" with nothing shown; now the field is
    named (exit 4) or it is the node selector's error on that node, and the rest is shown."""
    objects = copy.deepcopy(OBJECTS)
    obj = next(o for o in objects if o.get("kind") == kind and (name is None or o["metadata"]["name"] == name))
    parent = obj
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    run = check_snapshot_run(objects, "files", command)
    assert run.stdout.strip(), run


# --------------------------------------------------------------------------- Karpenter requirements

_KEYS = ["karpenter.sh/nodepool", "karpenter.sh/capacity-type", "node.kubernetes.io/instance-type",
         "karpenter.k8s.aws/instance-cpu", "topology.kubernetes.io/zone", "example.com/x", "", "Bad Key"]
KARPENTER_REQUIREMENT = st.one_of(
    st.fixed_dictionaries({"key": st.sampled_from(_KEYS),
                           "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte",
                                                        "Lte", "in", "Bogus"]),
                           "values": st.lists(st.sampled_from(["abc", "1", "-1", "9223372036854775808", "", "gpu",
                                                               "default", "spot", "g6e.12xlarge", "us-west-2a"]),
                                              max_size=3)},
                          optional={"minValues": st.one_of(st.integers(-2, 100), VALUES)}),
    VALUES)
_HOLDERS = [(i, path) for i, obj in enumerate(OBJECTS) for path in
            ((("spec", "requirements"),) if obj.get("kind") == "NodeOverlay" else
             (("spec", "template", "spec", "requirements"),) if obj.get("kind") == "NodePool" else ())]


@st.composite
def karpenter_requirements(draw):
    """A NodeOverlay's or NodePool's requirements replaced by random ones."""
    objects = copy.deepcopy(OBJECTS)
    index, path = draw(st.sampled_from(_HOLDERS))
    parent = objects[index]
    for step in path[:-1]:
        parent = parent.setdefault(step, {})
    parent[path[-1]] = draw(st.one_of(st.lists(KARPENTER_REQUIREMENT, min_size=1, max_size=3), VALUES))
    note(f"{objects[index]['kind']} {objects[index]['metadata']['name']}: requirements = {parent[path[-1]]!r}")
    return objects


@FUZZ
@given(karpenter_requirements(), st.sampled_from([("overlays",), ("overlays", "-o", "json"),
                                                  ("explain", "node", "worker-gpu-1"), ("claims", "-A")]))
@target
def test_karpenter_requirements(objects, command):
    check_snapshot_run(objects, "files", command)
