"""Device selector CEL, evaluated as Kubernetes evaluates it (k8s.io/dynamic-resource-allocation/cel).

Library decision (measured 2026-11-23 on this 2-core machine, one selector over one device):
- ``cel-expr-python`` 0.1.3 (Google's cel-expr project: Python bindings of the C++ CEL
  implementation, Apache-2.0, no Python dependencies): type-checked environments, the strings
  extension, errors as values (a missing key is ``NOT_FOUND: Key not found in map``, so "false"
  and "failed" stay apart), custom functions with typed overloads; ~87,000 evaluations/s with
  Python-implemented Kubernetes functions. Its Python bindings cannot declare opaque types yet
  (``UNIMPLEMENTED: Unimplemented type``), so Quantity and Semver values are carried as one-key
  maps (``{"__k8s_quantity__": canonical}``) with member overloads on them: every Kubernetes
  function works, equality is semantic (canonical form), and the only difference is that such a
  value also answers map operations (``size(q)``) where Kubernetes would refuse to compile.
- ``cel-python`` 0.5.0 (pure Python): correct semantics and free-form custom types, but ~3,300
  evaluations/s (the 1,000 nodes x 8 devices x 3 requests goal would take ~8 s) and four heavy
  dependencies (lark, pendulum, google-re2, jmespath).
- ``common-expression-language`` 0.10.0 (Rust bindings): ~85,000 evaluations/s, but custom
  functions cannot return non-JSON values (no Quantity), errors are exceptions, and it pulls a
  CLI stack (typer, rich, prompt-toolkit) into every install.
Chosen: cel-expr-python, for fidelity (the reference implementation family), speed and upkeep
(Google's CEL team). Nothing here interprets CEL: this module only declares what Kubernetes
declares and adapts values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import semver
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from kubectl_dra.quantity import Quantity, QuantityError

QUANTITY, SEMVER = "__k8s_quantity__", "__k8s_semver__"


class CELError(Exception):
    """A runtime error of one evaluation (Kubernetes: ``CEL runtime error``)."""


COST_LIMIT = 1_000_000
"""``resourceapi.CELSelectorExpressionMaxCost``: the scheduler stops an evaluation past this runtime
cost with ``operation cancelled: actual cost limit exceeded`` (k8s.io/dynamic-resource-allocation/cel)."""

ITERATION_BUDGET = 10_000
"""What the evaluator (cel-cpp through cel-expr-python) runs of comprehension iterations per
evaluation; fixed by the binding. Far below what the scheduler's cost limit allows, so running out
of it says nothing about the scheduler's verdict."""


COST_ERROR = "operation cancelled: actual cost limit exceeded"
"""cel-go's words past the runtime cost limit; the scheduler wraps them as ``claim NS/NAME: selector
#I on device DRIVER/POOL/DEVICE: CEL runtime error: ...`` (checked on the real v1.37.2 scheduler,
tests/cluster/test_cel_cost.py)."""


class CELBeyondEvaluator(Exception):
    """The evaluator stopped where the scheduler would go on (or stop by its cost limit): no verdict.
    ``budget``: it ran out of comprehension iterations (the scheduler may then fail with COST_ERROR)."""

    def __init__(self, message: str, budget: bool = False):
        super().__init__(message)
        self.budget = budget


@dataclass(frozen=True, slots=True)
class Compiled:
    expression: str
    program: object | None  # None when it did not compile
    error: str | None = None  # the compile error, in CEL's words
    unsupported: bool = False  # it names a function this wrapper lacks (IP, CIDR, URL, format, comprehensions)
    domains: tuple[tuple[str, str], ...] = ()  # ("attributes"|"capacity", domain) indexed literally


_DOMAIN = re.compile(r"""device\.(attributes|capacity)(?:\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]|\.([A-Za-z_][A-Za-z0-9_]*)(?!\s*\())""")
_ANY_USE = re.compile(r"device\.(attributes|capacity)\b")


def _literal_domains(expression: str) -> tuple[tuple[str, str], ...]:
    """Kubernetes answers ``device.attributes["d"]`` with an empty map for a domain the device does
    not have; a plain map would fail. When every use of ``device.attributes``/``capacity`` in the
    expression is such a literal index (no ``in``, ``size`` or iteration that would see the added
    key), those domains are added as empty maps before evaluation."""
    found = [(m.group(1), m.group(2) or m.group(3) or m.group(4)) for m in _DOMAIN.finditer(expression)]
    if len(found) != len(_ANY_USE.findall(expression)):
        return ()
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=4096)
def _parsed_quantity(text: str):
    return Quantity.parse(text)


@lru_cache(maxsize=4096)
def _parsed_semver(text: str):
    return semver.Version.parse(text)


def _quantity_of(value):
    if not isinstance(value, dict) or QUANTITY not in value:
        raise CELError("not a quantity")
    return _parsed_quantity(value[QUANTITY])


def quantity_value(q) -> dict:
    """A Quantity as CEL sees it (canonical text, so equal quantities compare equal)."""
    return {QUANTITY: str(q)}


def semver_value(text: str) -> dict:
    """A version attribute as CEL sees it; build metadata is dropped (Kubernetes' Semver equality
    and ordering ignore it). An invalid version raises ValueError (Kubernetes then fails every
    evaluation on the device)."""
    return {SEMVER: _canonical_semver(text)}


@lru_cache(maxsize=4096)
def _canonical_semver(text: str) -> str:
    return str(_parsed_semver(text).replace(build=None))


def _semver_of(value):
    if not isinstance(value, dict) or SEMVER not in value:
        raise CELError("not a semver")
    return _parsed_semver(value[SEMVER])


def _compare(a, b) -> int:
    if isinstance(a, dict) and QUANTITY in a:
        x, y = _quantity_of(a), _quantity_of(b)
        return (x > y) - (x < y)
    x, y = _semver_of(a), _semver_of(b)
    return x.compare(y)


def _to_quantity(text: str) -> dict:
    try:
        return quantity_value(_parsed_quantity(text))
    except QuantityError as exc:
        raise CELError(f"quantities must match the regular expression: {exc}") from None


def _is_quantity(text: str) -> bool:
    try:
        _to_quantity(text)
        return True
    except CELError:
        return False


def _to_semver(text: str, normalize: bool = False) -> dict:
    if normalize:
        text = _normalize_semver(text)
    try:
        return semver_value(text)
    except ValueError as exc:
        raise CELError(f"could not parse {text!r} as semver: {exc}") from None


def _normalize_semver(text: str) -> str:
    """The Kubernetes library's normalization: drop a leading v, pad missing minor/patch with 0."""
    text = text[1:] if text.startswith("v") else text
    core, sep, rest = text.partition("-") if "-" in text else text.partition("+")
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    return ".".join(str(int(p)) if (p.isascii() and p.isdigit()) else p for p in parts) + (sep + rest if sep else "")


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _to_semver(text, normalize)
        return True
    except CELError:
        return False


def _as_integer(q) -> int:
    value = _quantity_of(q)
    fraction = value.as_fraction()
    if fraction.denominator != 1 or not -(1 << 63) <= fraction.numerator < (1 << 63):
        raise CELError("cannot convert value to integer")
    return fraction.numerator


def _add(a, b):
    other = Quantity.from_int(b) if isinstance(b, int) else _quantity_of(b)
    return quantity_value(_quantity_of(a) + other)


def _sub(a, b):
    other = Quantity.from_int(b) if isinstance(b, int) else _quantity_of(b)
    return quantity_value(_quantity_of(a) - other)


def _list_min(xs):
    if not xs:
        raise CELError("min called on empty list")
    return min(xs)


def _list_max(xs):
    if not xs:
        raise CELError("max called on empty list")
    return max(xs)


def _list_slice(xs, start, end):
    if start < 0 or end < start or end > len(xs):
        raise CELError(f"cannot slice({start}, {end}), list is length {len(xs)}")
    return list(xs[start:end])


def _find(text: str, pattern: str) -> str:
    try:
        match = re.search(pattern, text)
    except re.error as exc:
        raise CELError(f"Illegal regex: {exc}") from None
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    try:
        found = [m.group(0) for m in re.finditer(pattern, text)]
    except re.error as exc:
        raise CELError(f"Illegal regex: {exc}") from None
    return found if limit < 0 else found[:limit]


@lru_cache(maxsize=1)
def _env():
    t = cel.Type
    value = t.Map(t.STRING, t.DYN)  # a Quantity or a Semver, carried as a one-key map

    def fn(name, *overloads):
        return cel.FunctionDecl(name, [cel.Overload(oid, ret, params, is_member=member, impl=impl)
                                       for oid, ret, params, member, impl in overloads])

    scalars = (t.STRING, t.INT, t.BOOL, t.DOUBLE, t.UINT)
    functions = [
        fn("quantity", ("quantity_string", value, [t.STRING], False, _to_quantity)),
        fn("isQuantity", ("is_quantity_string", t.BOOL, [t.STRING], False, _is_quantity)),
        fn("semver", ("semver_string", value, [t.STRING], False, _to_semver),
           ("semver_string_bool", value, [t.STRING, t.BOOL], False, _to_semver)),
        fn("isSemver", ("is_semver_string", t.BOOL, [t.STRING], False, _is_semver),
           ("is_semver_string_bool", t.BOOL, [t.STRING, t.BOOL], False, _is_semver)),
        fn("compareTo", ("value_compare_to", t.INT, [value, value], True, _compare)),
        fn("isGreaterThan", ("value_is_greater_than", t.BOOL, [value, value], True, lambda a, b: _compare(a, b) > 0)),
        fn("isLessThan", ("value_is_less_than", t.BOOL, [value, value], True, lambda a, b: _compare(a, b) < 0)),
        fn("isInteger", ("quantity_is_integer", t.BOOL, [value], True,
                         lambda q: _quantity_of(q).as_fraction().denominator == 1)),
        fn("asInteger", ("quantity_as_integer", t.INT, [value], True, _as_integer)),
        fn("asApproximateFloat", ("quantity_as_float", t.DOUBLE, [value], True,
                                  lambda q: float(_quantity_of(q).as_fraction()))),
        fn("sign", ("quantity_sign", t.INT, [value], False, lambda q: _quantity_of(q).sign())),  # global only
        # the Kubernetes lists library (v1), cel-go's sets and lists (v3) extensions, regex find
        fn("isSorted", ("list_is_sorted", t.BOOL, [t.List(t.DYN)], True, lambda xs: list(xs) == sorted(xs))),
        fn("sum", ("list_sum", t.DYN, [t.List(t.DYN)], True, lambda xs: sum(xs) if xs else 0)),
        fn("min", ("list_min", t.DYN, [t.List(t.DYN)], True, _list_min)),
        fn("max", ("list_max", t.DYN, [t.List(t.DYN)], True, _list_max)),
        # runtime overloads match concrete kinds only: one per element kind
        fn("includes", *((f"list_includes_{k.name().lower()}", t.BOOL, [t.List(t.DYN), k], True,
                          lambda target, x: x in target) for k in scalars),
           *((f"{k.name().lower()}_includes", t.BOOL, [k, k], True, lambda target, x: target == x) for k in scalars)),
        fn("slice", ("list_slice", t.List(t.DYN), [t.List(t.DYN), t.INT, t.INT], True, _list_slice)),
        fn("flatten", ("list_flatten", t.List(t.DYN), [t.List(t.DYN)], True,
                       lambda xs: [y for x in xs for y in (x if isinstance(x, list) else [x])])),
        fn("sort", ("list_sort", t.List(t.DYN), [t.List(t.DYN)], True, lambda xs: sorted(xs))),
        fn("distinct", ("list_distinct", t.List(t.DYN), [t.List(t.DYN)], True,
                        lambda xs: [x for i, x in enumerate(xs) if x not in xs[:i]])),
        fn("sets.contains", ("sets_contains", t.BOOL, [t.List(t.DYN), t.List(t.DYN)], False,
                             lambda a, b: all(x in a for x in b))),
        fn("sets.equivalent", ("sets_equivalent", t.BOOL, [t.List(t.DYN), t.List(t.DYN)], False,
                               lambda a, b: all(x in a for x in b) and all(x in b for x in a))),
        fn("sets.intersects", ("sets_intersects", t.BOOL, [t.List(t.DYN), t.List(t.DYN)], False,
                               lambda a, b: any(x in a for x in b))),
        fn("find", ("string_find", t.STRING, [t.STRING, t.STRING], True, _find)),
        fn("findAll", ("string_find_all", t.List(t.STRING), [t.STRING, t.STRING], True, _find_all),
           ("string_find_all_n", t.List(t.STRING), [t.STRING, t.STRING, t.INT], True, _find_all)),
        fn("add", ("quantity_add", value, [value, value], True, _add),
           ("quantity_add_int", value, [value, t.INT], True, _add)),
        fn("sub", ("quantity_sub", value, [value, value], True, _sub),
           ("quantity_sub_int", value, [value, t.INT], True, _sub)),
        fn("major", ("semver_major", t.INT, [value], True, lambda s: _semver_of(s).major)),
        fn("minor", ("semver_minor", t.INT, [value], True, lambda s: _semver_of(s).minor)),
        fn("patch", ("semver_patch", t.INT, [value], True, lambda s: _semver_of(s).patch)),
    ]

    device = t.Map(t.STRING, t.DYN)
    return cel.NewEnv(variables={"device": device}, functions=functions,
                      extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings(), ext_optional.ExtOptional()])


# Functions of the Kubernetes CEL environment this wrapper does not declare (IP, CIDR, URL, format
# libraries; two-variable comprehensions; lists.range, sortBy, optional list helpers): an expression
# naming one is "cannot tell", never "invalid".
UNSUPPORTED = frozenset({
    "ip", "isIP", "cidr", "isCIDR", "url", "isURL", "format", "getScheme", "getHost", "getHostname", "getPort",
    "getEscapedPath", "getQuery", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
    "isLinkLocalUnicast", "isGlobalUnicast", "isCanonical", "containsIP", "containsCIDR", "prefixLength", "masked",
    "transformList", "transformMap", "transformMapEntry", "existsOne", "sortBy", "range", "lists", "first", "last",
    "unwrapOpt", "indexOf", "lastIndexOf", "reverse", "validate", "named", "strings", "quote",
})
_NAMED = re.compile(r"(?:undeclared reference to|found no matching overload for) '([A-Za-z_.]+)'")


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> Compiled:
    """Compiled once per expression text; a compile error is kept, not raised."""
    try:
        program = _env().compile(expression)
    except RuntimeError as exc:
        message = str(exc).removeprefix("INVALID_ARGUMENT: ").split(" [INVALID_ARGUMENT]")[0].strip()
        named = _NAMED.findall(message)
        # any such function makes it "cannot tell" (its macro variables are undeclared too): never "invalid"
        unsupported = any(n.split(".")[-1] in UNSUPPORTED or n.split(".")[0] in UNSUPPORTED for n in named)
        return Compiled(expression, None, message, unsupported)
    kind = program.return_type().name()
    if kind not in ("BOOL", "DYN"):
        return Compiled(expression, None, f"must evaluate to bool or the unknown type, not {kind.lower()}")
    return Compiled(expression, program, domains=_literal_domains(expression))


def _key_error(text: str) -> str:
    """cel-cpp's ``Key not found in map : "id"`` in Kubernetes' words: ``no such key: id``."""
    match = re.search(r'Key not found in map\s*:\s*"?([^"]*)"?', text)
    return f"no such key: {match.group(1)}" if match else text


def evaluate(compiled: Compiled, device: dict) -> bool:
    """True or False; a runtime error raises :class:`CELError` with CEL's message."""
    if device.get("_invalid"):
        raise CELError(device["_invalid"])
    if compiled.domains:
        device = {**device, "attributes": dict(device["attributes"]), "capacity": dict(device["capacity"])}
        for kind, domain in compiled.domains:
            device[kind].setdefault(domain, {})
    try:
        value = compiled.program.eval(data={"device": device})
    except RuntimeError as exc:  # cel-cpp's own limits, not a CEL result
        if "Iteration budget exceeded" in str(exc):
            raise CELBeyondEvaluator(
                f"kubectl-dra's CEL evaluator stops after {ITERATION_BUDGET:,} comprehension iterations and counts no "
                "cost, while the scheduler's (cel-go) counts a cost for every step it evaluates and fails past "
                f"{COST_LIMIT:,} with \"{COST_ERROR}\"; so the scheduler either evaluates this selector (true or "
                "false) or fails the node with that error, and which one is not known (the API server refuses at "
                "admission a selector whose estimated worst-case cost is past that limit)", budget=True) from None
        raise CELBeyondEvaluator(f"kubectl-dra's CEL evaluator failed: {exc}") from None
    kind = value.type().name()
    if kind in ("bool", "BOOL"):
        return bool(value.value())
    if kind in ("error", "ERROR"):
        raise CELError(_key_error(str(value.value())))
    raise CELError(f"CEL result of type {kind.split('<')[0].lower()} could not be converted to bool")
