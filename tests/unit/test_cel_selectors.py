"""Device selector CEL against the Kubernetes test table (k8s.io/dynamic-resource-allocation
cel/compile_test.go TestCEL @ v0.37.2, the scheduler's stored-expressions environment), through
the same device values the allocator builds from a ResourceSlice device."""

from __future__ import annotations

import pytest

from kubectl_dra.allocation.allocator import _domain_maps
from kubectl_dra.allocation.cel import CELError, compile_selector, evaluate
from kubectl_dra.model.resource import Device

DRV = "dra.example.com"
A = 'device.attributes["dra.example.com"]'


def device(attributes=None, capacity=None, driver=DRV, multi=None) -> dict:
    view = Device.model_validate({"name": "d", "attributes": attributes or {},
                                  "capacity": {k: {"value": v} for k, v in (capacity or {}).items()},
                                  "allowMultipleAllocations": multi})
    attrs, caps = _domain_maps(view, driver)
    return {"driver": driver, "attributes": attrs, "capacity": caps, "allowMultipleAllocations": bool(multi)}


# (name, expression, attributes, capacity, driver, expected: True/False or ("compile"|"runtime", substring))
CASES = [
    ("true", "true", None, None, DRV, True),
    ("false", "false", None, None, DRV, False),
    ("syntax-error", "?!", None, None, DRV, ("compile", "Syntax error")),
    ("type-error", "1", None, None, DRV, ("compile", "must evaluate to bool or the unknown type, not int")),
    ("runtime-error-lookup-identifier",
     'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))', None, None, DRV,
     ("runtime", "no such key: noSuchAttr")),
    ("runtime-error-lookup-map",
     'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))', None, None, DRV,
     ("runtime", "no such key: noSuchAttr")),
    ("domain-check-negative", '"no-such-domain" in device.attributes', None, None, DRV, False),
    ("domain-check-positive", '"dra.example.com" in device.attributes',
     {"dra.example.com/something": {"bool": True}}, None, "", True),
    ("empty-driver-name", 'device.driver == ""', None, None, "", True),
    ("real-driver-name", 'device.driver == "dra.example.com"', None, None, DRV, True),
    ("driver-name-qualifier", f"{A}.name", {"name": {"bool": True}}, None, DRV, True),
    ("driver-name-qualifier-map-lookup", f'{A}["name"]', {"name": {"bool": True}}, None, DRV, True),
    ("bind", f"cel.bind(dra, {A}, dra.name)", {"name": {"bool": True}}, None, DRV, True),
    ("qualified-attribute-name", 'device.attributes["other.example.com"].name',
     {"other.example.com/name": {"bool": True}}, None, DRV, True),
    ("bool", f"{A}.name", {"name": {"bool": True}}, None, DRV, True),
    ("int", f"{A}.name > 0", {"name": {"int": 1}}, None, DRV, True),
    ("string", f'{A}.name == "fish"', {"name": {"string": "fish"}}, None, DRV, True),
    ("list-result-type-causes-match-error", f"{A}.names", {"names": {"strings": ["fish", "bird"]}}, None, DRV,
     ("runtime", "CEL result of type list could not be converted to bool")),
    ("includes-function-can-evaluate", f'{A}.name.includes("fish")', {"name": {"strings": ["fish", "bird"]}}, None,
     DRV, True),
    ("list-of-bool", f"{A}.names.size() == 2", {"names": {"bools": [True, False]}}, None, DRV, True),
    ("list-of-int", f"{A}.names.size() == 2", {"names": {"ints": [1, 2]}}, None, DRV, True),
    ("list-of-string", f"{A}.names.size() == 2", {"names": {"strings": ["fish", "bird"]}}, None, DRV, True),
    ("list-of-semver", f"{A}.names.size() == 2", {"names": {"versions": ["1.0.0", "2.0.0"]}}, None, DRV, True),
    ("macro-on-list-of-int", f"{A}.names.exists(x, x > 0)", {"names": {"ints": [1, 2]}}, None, DRV, True),
    ("macro-on-list-of-string", f'{A}.names.all(x, x != "")', {"names": {"strings": ["fish", "bird"]}}, None, DRV,
     True),
    ("macro-on-list-of-semver", f'{A}.names.all(x, x.isGreaterThan(semver("0.0.1")))',
     {"names": {"versions": ["1.0.0", "2.0.0"]}}, None, DRV, True),
    ("includes-on-bool-scalar-positive", f"{A}.name.includes(true)", {"name": {"bool": True}}, None, DRV, True),
    ("includes-on-bool-scalar-negative", f"{A}.name.includes(true)", {"name": {"bool": False}}, None, DRV, False),
    ("includes-on-bool-list-positive", f"{A}.name.includes(true)", {"name": {"bools": [True, False]}}, None, DRV, True),
    ("includes-on-bool-list-negative", f"{A}.name.includes(false)", {"name": {"bools": [True, True]}}, None, DRV,
     False),
    ("includes-on-int-scalar-positive", f"{A}.name.includes(1)", {"name": {"int": 1}}, None, DRV, True),
    ("includes-on-int-scalar-negative", f"{A}.name.includes(1)", {"name": {"int": 2}}, None, DRV, False),
    ("includes-on-int-list-positive", f"{A}.name.includes(1)", {"name": {"ints": [1, 2]}}, None, DRV, True),
    ("includes-on-int-list-negative", f"{A}.name.includes(3)", {"name": {"ints": [1, 2]}}, None, DRV, False),
    ("includes-on-string-scalar-positive", f'{A}.name.includes("fish")', {"name": {"string": "fish"}}, None, DRV,
     True),
    ("includes-on-string-scalar-negative", f'{A}.name.includes("bird")', {"name": {"string": "fish"}}, None, DRV,
     False),
    ("includes-on-string-list-positive", f'{A}.name.includes("fish")', {"name": {"strings": ["fish", "bird"]}}, None,
     DRV, True),
    ("includes-on-string-list-negative", f'{A}.name.includes("cat")', {"name": {"strings": ["fish", "bird"]}}, None,
     DRV, False),
    ("includes-on-very-long-list-positive", f'{A}.name.includes("value-48")',
     {"name": {"strings": [f"value-{i}" for i in range(48)]}}, None, DRV, False),
    ("in-operator-on-list", f"1 in {A}.names", {"names": {"ints": [1, 2, 3]}}, None, DRV, True),
    ("version", f'{A}.name.isGreaterThan(semver("0.0.1"))', {"name": {"version": "1.0.0"}}, None, DRV, True),
    ("version_v", f'{A}.name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
     {"name": {"version": "1.0.0"}}, None, DRV, True),
    ("quantity", 'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', None, {"name": "1Mi"},
     DRV, True),
    ("check-positive", '"name" in device.capacity["dra.example.com"] && '
                       'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', None, {"name": "1Mi"},
     DRV, True),
    ("check-negative", '!("name" in device.capacity["dra.example.com"]) || '
                       'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', None, None, DRV, True),
    ("all", " && ".join([
        'device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki"))',
        'device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki"))',
        f"{A}.bool", f'{A}["bool"]', f"{A}.int > 0", f'{A}["int"] > 0', f'{A}.string == "fish"',
        f'{A}["string"] == "fish"', f'{A}.version.isGreaterThan(semver("0.0.1"))',
        f'{A}["version"].isGreaterThan(semver("0.0.1"))']),
     {"bool": {"bool": True}, "int": {"int": 1}, "string": {"string": "fish"}, "version": {"version": "1.0.0"}},
     {"quantity": "1Mi"}, DRV, True),
    ("many", f"{A}.a && {A}.b && {A}.c", {"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}}, None, DRV,
     True),
    ("check_attribute_domains", 'device.attributes.exists_one(x, x == "dra.example.com")',
     {"services": {"string": "some_example_value"}}, None, DRV, True),
    ("check_attribute_ids", f'{A}.exists_one(x, x == "services")', {"services": {"string": "some_example_value"}},
     None, DRV, True),
    ("split_attribute", f'{A}.services.split("example").size() >= 2', {"services": {"string": "some_example_value"}},
     None, DRV, True),
    ("regexp_attribute", f'{A}.services.matches("[^a]?sym")', {"services": {"string": "asymetric"}}, None, DRV, True),
    ("check_capacity_domains", 'device.capacity.exists_one(x, x == "dra.example.com")', None, {"memory": "1Mi"}, DRV,
     True),
    ("check_capacity_ids", 'device.capacity["dra.example.com"].exists_one(x, x == "memory")', None, {"memory": "1Mi"},
     DRV, True),
]


def outcome(expression, dev):
    compiled = compile_selector(expression)
    if compiled.program is None:
        return ("compile", compiled.error)
    try:
        return evaluate(compiled, dev)
    except CELError as exc:
        return ("runtime", str(exc))


@pytest.mark.parametrize("name, expression, attributes, capacity, driver, expected", CASES, ids=[c[0] for c in CASES])
def test_kubernetes_cel_table(name, expression, attributes, capacity, driver, expected):
    got = outcome(expression, device(attributes, capacity, driver))
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and got[0] == expected[0] and expected[1] in got[1], got
    else:
        assert got is expected


@pytest.mark.parametrize("multi, expression, expected", [
    (True, "device.allowMultipleAllocations == true", True),
    (None, "device.allowMultipleAllocations == false", True),
    (False, "device.allowMultipleAllocations == false", True),
])
def test_allow_multiple_allocations(multi, expression, expected):
    assert outcome(expression, device(multi=multi)) is expected


@pytest.mark.parametrize("expression, expected", [
    ('quantity("1Gi").compareTo(quantity("1G")) == 1', True),
    ('quantity("1Gi") == quantity("1024Mi")', True),
    ('sign(quantity("-2")) == -1', True),
    ('quantity("1.5").isInteger()', False),
    ('quantity("1.5").asInteger() == 1', ("runtime", "cannot convert value to integer")),
    ('quantity("1Gi").add(quantity("1Gi")).compareTo(quantity("2Gi")) == 0', True),
    ('quantity("1k").sub(1).asInteger() == 999', True),
    ('isQuantity("200K")', False),
    ('semver("1.2.3-alpha+b1") == semver("1.2.3-alpha+zzz")', True),  # build metadata ignored
    ('semver("1.2.3-alpha").isLessThan(semver("1.2.3"))', True),
    ('semver("1.0", true).minor() == 0 && !isSemver("1.0") && isSemver("1.0", true)', True),
    ('"ABC".lowerAscii() == "abc" && "a,b".split(",").size() == 2', True),
    ('sets.intersects([1, 2], [2, 3]) && sets.contains([1, 2], [1])', True),
    ('[3, 1, 2].min() == 1 && [1, 2].sum() == 3 && [1, 2].isSorted()', True),
    ('"abc123".find("[0-9]+") == "123"', True),
])
def test_kubernetes_libraries(expression, expected):
    got = outcome(expression, device())
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and expected[1] in got[1], got
    else:
        assert got is expected


def test_invalid_attributes_fail_every_evaluation_on_the_device():
    from kubectl_dra.allocation.gather import Pool
    from kubectl_dra.allocation.allocator import Allocator, AllocatedState

    view = Device.model_validate({"name": "d", "attributes": {"v": {"version": "not-a-version"}}})
    cel_device = Allocator([], {}, AllocatedState())._cel_device(Pool(DRV, "p", 1), view)
    with pytest.raises(CELError, match="not valid SemVer"):
        evaluate(compile_selector("true"), cel_device)
    empty = Device.model_validate({"name": "e", "attributes": {"flag": {}}})  # an attribute with no value
    cel_device = Allocator([], {}, AllocatedState())._cel_device(Pool(DRV, "p", 1), empty)
    with pytest.raises(CELError, match="attribute flag: unsupported attribute value"):
        evaluate(compile_selector("true"), cel_device)


@pytest.mark.parametrize("expression", ['ip("10.0.0.1").family() == 4', 'url("https://x").getHost() == "x"',
                                        '[1].transformList(i, v, v) == [1]'])
def test_functions_this_tool_lacks_are_unsupported_not_invalid(expression):
    compiled = compile_selector(expression)
    assert compiled.program is None and compiled.unsupported


def test_a_misspelled_variable_is_invalid_not_unsupported():
    compiled = compile_selector("noSuchVar")
    assert compiled.program is None and not compiled.unsupported and "undeclared reference" in compiled.error
