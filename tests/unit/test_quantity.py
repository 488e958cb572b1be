"""kubectl_dra.quantity against upstream resource.Quantity behaviour.

Table rows marked "upstream" are facts from k8s.io/apimachinery/pkg/api/resource/quantity_test.go
(TestQuantityParse, TestQuantityString, TestQuantityParseEmit, TestParseQuantity, TestMilliNewSet,
TestNewSet, TestScaledValue, TestAdd, TestSub, TestMul, TestQuantityCmp); the canonical strings
for TestQuantityParse rows are derived from the values that test expects.
"""

from __future__ import annotations

import copy
import json
import pickle
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_dra.errors import InputError, QuantityError
from kubectl_dra.quantity import Format, Quantity, parse_quantity

Q = Quantity.parse
DSI, BSI, DEXP = Format.DECIMAL_SI, Format.BINARY_SI, Format.DECIMAL_EXPONENT
MAX_INT64 = 2**63 - 1

# --------------------------------------------------------------------------------------------
# parse -> canonical string
# --------------------------------------------------------------------------------------------

CANONICAL = [
    # upstream TestQuantityParseEmit
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
    # upstream TestQuantityString: alternate spellings
    ("307200Ki", "300Mi"),
    ("1025024Mi", "1001Gi"),
    ("1024Gi", "1Ti"),
    ("5000m", "5"),
    ("0.5", "500m"),
    ("0.001T", "1G"),
    ("1000u", "1m"),
    ("1.08", "1080m"),
    ("1080000000n", "1080m"),
    ("1000E", "1e21"),  # no DecimalSI suffix past E: exponent form, not "1"
    ("5000E", "5e21"),
    ("1000000E", "1e24"),
    (".001e12", "1e9"),
    ("0.001e0", "1e-3"),
    ("1000e-12", "1e-9"),
    ("00", "0"),
    # upstream TestQuantityString: canonical spellings stay
    ("6Ki", "6Ki"),
    ("300Mi", "300Mi"),
    ("1001Gi", "1001Gi"),
    ("1Ti", "1Ti"),
    ("1G", "1G"),
    ("1m", "1m"),
    ("80m", "80m"),
    ("300M", "300M"),
    ("1T", "1T"),
    ("1E", "1E"),
    ("1234567M", "1234567M"),
    ("3k", "3k"),
    ("1025", "1025"),
    ("0", "0"),
    ("1e9", "1e9"),
    ("1e-3", "1e-3"),
    ("1e-9", "1e-9"),
    ("80e-3", "80e-3"),
    ("300e6", "300e6"),
    ("1e12", "1e12"),
    ("3e3", "3e3"),
    ("1n", "1n"),
    ("80n", "80n"),
    ("1080n", "1080n"),
    ("1u", "1u"),
    ("80u", "80u"),
    ("1080u", "1080u"),
    # upstream TestParseQuantity
    ("999999999999999999.1", "999999999999999999100m"),
    ("1000000000000000000", "1E"),
    ("10000000000000000000000m", "10E"),
    ("1.0000000000000000001E", "1000000000000000000100m"),
    ("9223372036854775808", "9223372036854775808"),
    ("-9223372036854775809000m", "-9223372036854775809"),
    ("10.000000000000000001E", "10000000000000000001"),
    ("9999999999999999999.0", "9999999999999999999"),
    ("-1.0E", "-1E"),
    # upstream TestQuantityParse values, printed canonically
    ("9Ei", "9223372036854775807"),  # BinarySI capped at MaxInt64
    ("9223372036854775807Ki", "9223372036854775807"),
    ("100.035Ki", "102435840m"),  # BinarySI with a fraction prints as DecimalSI
    ("0.5Mi", "512Ki"),
    ("0.05Gi", "53687091200m"),
    ("3.001n", "4n"),  # finer than 1n rounds up
    ("1.1E-9", "2e-9"),
    ("0.0000000001", "1n"),
    ("0.00000000050", "1n"),
    ("0.5e-9", "1e-9"),
    ("0.9n", "1n"),
    ("0.00000012345", "124n"),
    ("0.00000012354", "124n"),
    ("12E", "12E"),
    ("1.01E", "1010P"),
    ("2.5P", "2500T"),
    ("40.1T", "40100G"),
    ("5.444T", "5444G"),
    ("6.987654321G", "6987654321"),
    ("7.123456M", "7123456"),
    ("8.1k", "8100"),
    ("100.035k", "100035"),
    ("10.035M", "10035k"),
    ("0.0005k", "500m"),
    ("0.00050k", "500m"),
    ("0.50000", "500m"),
    ("1.2e3", "1200"),
    ("1.3E+6", "1300e3"),
    ("1.53E12", "1530e9"),
    ("1.7E18", "1700e15"),
    ("0.5e0", "500e-3"),
    ("0.5e-1", "50e-3"),
    ("50k", "50k"),
    ("1.", "1"),
    ("1.G", "1G"),
    (".0001k", "100m"),
    # the brief's examples
    ("1.5", "1500m"),
    ("1536Mi", "1536Mi"),
    ("1.5Gi", "1536Mi"),
    ("0.1", "100m"),
    ("1000m", "1"),
    ("1k", "1k"),
    ("1e3", "1e3"),
    ("100Mi", "100Mi"),
    ("1024Ki", "1Mi"),
    ("1.5e-9", "2e-9"),
    ("12e6", "12e6"),
    ("123456789", "123456789"),
    # spellings upstream String() echoes verbatim (#141166); the canonical form differs
    ("+1", "1"),
    ("01", "1"),
    ("5.", "5"),
    ("1E3", "1e3"),
    ("1e+21", "1e21"),
    ("1e0", "1"),
    ("123e0", "123"),
    ("1.500k", "1500"),
    # BinarySI below 1024 or fractional prints as DecimalSI
    ("1.1Ki", "1126400m"),
    ("0.1Ki", "102400m"),
    ("1.5Ki", "1536"),
    ("0.9765625Ki", "1k"),  # BinarySI 1000: below 1024, so printed as DecimalSI
    ("-0.9765625Ki", "-1k"),
    # signs
    ("-1Ki", "-1Ki"),
    ("-1.5", "-1500m"),
    ("-0", "0"),
    ("-0.5Mi", "-512Ki"),
    ("-.000000000001Ki", "-2n"),  # rounds away from zero
    ("-1.1E-9", "-2e-9"),
]


@pytest.mark.parametrize(("text", "expected"), CANONICAL)
def test_parse_prints_canonical(text: str, expected: str) -> None:
    assert str(Q(text)) == expected
    assert str(parse_quantity(text)) == expected
    assert str(Quantity(text)) == expected


@pytest.mark.parametrize(("text", "expected"), CANONICAL)
def test_canonical_string_reparses_to_itself(text: str, expected: str) -> None:
    again = Q(expected)
    assert again == Q(text)
    assert str(again) == expected


PARSED_FORMAT = [
    ("0", DSI),
    ("0Ki", BSI),  # upstream: zero keeps the suffix's format
    ("0e3", DEXP),
    ("1", DSI),
    ("1E", DSI),  # "E" alone is exa
    ("1E-3", DEXP),
    ("1e3", DEXP),
    ("1Ki", BSI),
    ("0.5Ki", BSI),  # 512 is not below 1
    ("0.000000000001Ki", DSI),  # upstream: rounds up, changes format
    ("-0.0005Ki", DSI),
    ("9Ei", BSI),
]


@pytest.mark.parametrize(("text", "fmt"), PARSED_FORMAT)
def test_parse_picks_upstream_format(text: str, fmt: Format) -> None:
    assert Q(text).format is fmt


PARSED_VALUE = [
    ("1Ki", Fraction(1024)),
    ("3Ei", Fraction(3 * 2**60)),
    ("8Ei", Fraction(MAX_INT64)),  # 2^63 is over the BinarySI cap
    ("-8Ei", Fraction(-MAX_INT64)),
    ("100.035Ki", Fraction(10243584, 100)),
    ("0.025Ti", Fraction(274877906944, 10)),
    ("1.5Gi", Fraction(3 * 2**29)),
    ("18446744073709551616", Fraction(2**64)),  # DecimalSI is not capped
    ("1.2345", Fraction(12345, 10000)),
    ("0.000000000001Ki", Fraction(2, 10**9)),
    ("1e999", Fraction(10**999)),
    ("1e-99999999999", Fraction(1, 10**9)),  # far below 1n still rounds to 1n
    ("1e-9223372036854775808", Fraction(1, 10**9)),  # the most negative int64 exponent
    ("0e9223372036854775807", Fraction(0)),
    ("0." + "0" * 150 + "1Ki", Fraction(1, 10**9)),
    # 2^-60 written out exactly (60 fraction digits): exactly one, not rounded
    ("0.000000000000000000867361737988403547205962240695953369140625Ei", Fraction(1)),
    ("1." + "0" * 149 + "1Ki", Fraction(1024 * 10**9 + 1, 10**9)),  # inexact past digit 100
]


@pytest.mark.parametrize(("text", "value"), PARSED_VALUE)
def test_parse_value_is_exact(text: str, value: Fraction) -> None:
    assert Q(text).as_fraction() == value


# --------------------------------------------------------------------------------------------
# rejection
# --------------------------------------------------------------------------------------------

INVALID = [
    "",
    # upstream TestQuantityParse invalid list
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    " 1",
    "1 ",
    # suffixes: case matters, no units, no stray characters
    "5mi",
    "1KiB",
    "1K",
    "1kb",
    "1m3",
    "1Ki5",
    "1Ee3",
    "1e",
    "1e+",
    "1E3.5",
    # numbers
    "1.2.3",
    "--1",
    "+-1",
    "1,5",
    "1_000",
    "0x10",
    "NaN",
    "inf",
    "١",  # Arabic-Indic digit one: int() would take it
    "１",  # fullwidth digit one
    "1\n",
    "\t1",
    # no digit at all (upstream's scanner reads these as 0; the grammar needs a digit)
    ".",
    "-",
    "+.",
    "k",
    "Mi",
    "e3",
    # exponent outside int64, as upstream's ParseInt; magnitude at or over 10^1000
    "1e9223372036854775808",
    "1e-9223372036854775809",
    "1e99999999999999999999",
    "1e1000",
    "1" * 1001,
]


@pytest.mark.parametrize("text", INVALID)
def test_rejects_with_message_quoting_input(text: str) -> None:
    with pytest.raises(QuantityError) as info:
        Q(text)
    message = str(info.value)
    assert message.startswith("invalid quantity ")
    assert json.dumps(text, ensure_ascii=False) in message
    assert "\n" not in message  # the CLI prints errors on one line


@pytest.mark.parametrize("value", [5, 0.5, None, b"1", ["1"]])
def test_rejects_non_string(value: object) -> None:
    # A ValueError (not TypeError), so pydantic validators turn it into a field error.
    with pytest.raises(QuantityError, match=re.escape(repr(value))):
        Q(value)  # type: ignore[arg-type]


def test_error_is_a_value_error_and_an_input_error() -> None:
    with pytest.raises(ValueError):
        Q("5mi")
    with pytest.raises(InputError):
        Q("5mi")


# --------------------------------------------------------------------------------------------
# value / milli_value / scaled_value
# --------------------------------------------------------------------------------------------

ROUNDING = [
    # text, value(), milli_value()
    ("0", 0, 0),
    ("1", 1, 1000),
    ("1.5", 2, 1500),
    ("1.0001", 2, 1001),
    ("100m", 1, 100),
    ("999m", 1, 999),
    ("1001m", 2, 1001),
    ("0.1m", 1, 1),
    ("1n", 1, 1),
    ("1Ki", 1024, 1024000),
    ("1.1Ki", 1127, 1126400),
    ("12E", 12 * 10**18, 12 * 10**21),  # past int64: exact, no overflow
    # negatives round away from zero, as upstream's int64 path (negativeScaleInt64)
    ("-1", -1, -1000),
    ("-1.5", -2, -1500),
    ("-1.0001", -2, -1001),
    ("-100m", -1, -100),
    ("-0.1m", -1, -1),
    ("-1n", -1, -1),
    ("-1.1Ki", -1127, -1126400),
]


@pytest.mark.parametrize(("text", "value", "milli"), ROUNDING)
def test_value_and_milli_value_round_away_from_zero(text: str, value: int, milli: int) -> None:
    q = Q(text)
    assert q.value() == value
    assert q.milli_value() == milli
    assert q.scaled_value(0) == value
    assert q.scaled_value(-3) == milli


NANO, MICRO, MILLI = -9, -6, -3
SCALED = [  # upstream TestScaledValue: 10^from_scale read at to_scale
    (NANO, NANO, 1),
    (NANO, MICRO, 1),
    (NANO, MILLI, 1),
    (NANO, 0, 1),
    (MICRO, NANO, 1000),
    (MICRO, MICRO, 1),
    (MICRO, MILLI, 1),
    (MICRO, 0, 1),
    (MILLI, NANO, 1000 * 1000),
    (MILLI, MICRO, 1000),
    (MILLI, MILLI, 1),
    (MILLI, 0, 1),
    (0, NANO, 1000 * 1000 * 1000),
    (0, MICRO, 1000 * 1000),
    (0, MILLI, 1000),
    (0, 0, 1),
    (2, -2, 100 * 100),
    (0, 10**6, 1),  # far below one unit still rounds up to one
    (0, -20, 10**20),
]


@pytest.mark.parametrize(("from_scale", "to_scale", "expected"), SCALED)
def test_scaled_value(from_scale: int, to_scale: int, expected: int) -> None:
    q = Quantity.from_fraction(Fraction(10) ** from_scale)
    assert q.scaled_value(to_scale) == expected
    assert (-q).scaled_value(to_scale) == -expected


@settings(max_examples=500, deadline=None)
@given(st.integers(min_value=-(10**30), max_value=10**30), st.integers(min_value=-12, max_value=50))
def test_scaled_value_is_the_exact_value_rounded_away_from_zero(nanos: int, scale: int) -> None:
    exact = Fraction(nanos, 10**9) / Fraction(10) ** scale
    magnitude = -(-abs(exact.numerator) // exact.denominator)  # ceil(|exact|)
    assert Quantity.from_fraction(Fraction(nanos, 10**9)).scaled_value(scale) == (magnitude if nanos >= 0 else -magnitude)


# --------------------------------------------------------------------------------------------
# constructors
# --------------------------------------------------------------------------------------------

CONSTRUCTED = [
    # upstream TestMilliNewSet
    (Quantity.from_milli(1), "1m", DSI),
    (Quantity.from_milli(1000), "1", DSI),
    (Quantity.from_milli(1234000), "1234", DSI),
    (Quantity.from_milli(1024, BSI), "1024m", BSI),  # format kept, prints decimally
    (Quantity.from_milli(1000000, DEXP), "1e3", DEXP),
    (Quantity.from_milli(1024 * 1024, BSI), "1048576m", BSI),
    # upstream TestNewSet
    (Quantity.from_int(1), "1", DSI),
    (Quantity.from_int(1000), "1k", DSI),
    (Quantity.from_int(1234000), "1234k", DSI),
    (Quantity.from_int(1024, BSI), "1Ki", BSI),
    (Quantity.from_int(1000000, DEXP), "1e6", DEXP),
    (Quantity.from_int(1024 * 1024, "BinarySI"), "1Mi", BSI),
    (Quantity.from_int(-5, BSI), "-5", BSI),
    (Quantity.from_int(1000, BSI), "1k", BSI),  # below 1024: printed as DecimalSI
    (Quantity.from_int(2000, BSI), "2000", BSI),  # whole and at least 1024: powers of 1024
    # upstream TestNewScaledSet, via exact fractions
    (Quantity.from_fraction(Fraction(1, 10**9)), "1n", DSI),
    (Quantity.from_fraction(Fraction(1000, 10**9)), "1u", DSI),
    (Quantity.from_fraction(Fraction(1000, 10**6)), "1m", DSI),
    (Quantity.from_fraction(Fraction(1, 1000)), "1m", DSI),
    (Quantity.from_fraction(1), "1", DSI),
    (Quantity.from_fraction(0), "0", DSI),
    # finer than 1n rounds away from zero, as parsing does
    (Quantity.from_fraction(Fraction(1, 3)), "333333334n", DSI),
    (Quantity.from_fraction(Fraction(-1, 3)), "-333333334n", DSI),
    (Quantity.from_fraction(Fraction(1, 10**12)), "1n", DSI),
    # BinarySI past Ei has no suffix: exponent form instead of dropping the factor
    (Quantity.from_int(2**70, BSI), "1180591620717411303424", BSI),
    (Quantity.from_int(2**70 * 1000, BSI), "1180591620717411303424e3", BSI),
    (Quantity.from_int(3 * 2**70, BSI), "3541774862152233910272", BSI),
    (Quantity.from_int(3 * 2**69, BSI), "1536Ei", BSI),
]


@pytest.mark.parametrize(("q", "expected", "fmt"), CONSTRUCTED)
def test_constructors(q: Quantity, expected: str, fmt: Format) -> None:
    assert str(q) == expected
    assert q.format is fmt


@pytest.mark.parametrize(
    "call",
    [
        lambda: Quantity.from_int(1.5),
        lambda: Quantity.from_int(True),
        lambda: Quantity.from_int("1"),
        lambda: Quantity.from_milli(0.5),
        lambda: Quantity.from_fraction(0.5),
        lambda: Quantity.from_fraction(True),
    ],
)
def test_constructors_reject_inexact_types(call) -> None:
    with pytest.raises(TypeError):
        call()


def test_constructors_reject_unknown_format() -> None:
    with pytest.raises(ValueError):
        Quantity.from_int(1, "invalidFormatDefaultsToExponent")


# --------------------------------------------------------------------------------------------
# arithmetic
# --------------------------------------------------------------------------------------------

ADD = [
    # a, b, str(a + b), format of a + b
    (Quantity.from_int(10), Quantity.from_int(10), "20", DSI),  # upstream TestAdd
    (Quantity.from_int(10), Quantity.from_int(1, BSI), "11", DSI),
    (Quantity.from_int(10, BSI), Quantity.from_int(1), "11", BSI),
    (Quantity.from_int(0), Quantity.from_int(50), "50", DSI),
    (Quantity.from_int(50), Quantity.from_int(0), "50", DSI),
    (Q("100m"), Q("0"), "100m", DSI),  # upstream TestQuantityAddZeroPreservesSuffix
    (Q("0"), Q("100m"), "100m", DSI),
    (Q("1Gi"), Q("0"), "1Gi", BSI),
    (Q("0"), Q("1Gi"), "1Gi", BSI),  # a zero receiver takes the other's format
    (Q("1024"), Q("1Ki"), "2048", DSI),  # otherwise the receiver's format is kept
    (Q("1Ki"), Q("1024"), "2Ki", BSI),
    (Q("1Gi"), Q("500m"), "1073741824500m", BSI),
    (Q("1.5"), Q("1.5"), "3", DSI),
    (Q("1Mi"), Q("-1Mi"), "0", BSI),
    (Q("1e3"), Q("1k"), "2e3", DEXP),
    (Q("999999999999999999"), Q("1"), "1E", DSI),
    (Q(str(MAX_INT64)), Q("1"), "9223372036854775808", DSI),  # no int64 overflow
]


@pytest.mark.parametrize(("a", "b", "expected", "fmt"), ADD)
def test_add(a: Quantity, b: Quantity, expected: str, fmt: Format) -> None:
    total = a + b
    assert str(total) == expected
    assert total.format is fmt
    assert total.as_fraction() == a.as_fraction() + b.as_fraction()


SUB = [
    (Quantity.from_int(10), Q("1e1"), "0", DSI),  # upstream TestSub
    (Quantity.from_int(10), Quantity.from_int(1, BSI), "9", DSI),
    (Quantity.from_int(10, BSI), Quantity.from_int(1), "9", BSI),
    (Q("0"), Quantity.from_int(50), "-50", DSI),
    (Quantity.from_int(50), Q("0"), "50", DSI),
    (Q("0"), Q("1Gi"), "-1Gi", BSI),  # upstream TestQuantitySubZeroPreservesSuffix
    (Q("1Gi"), Q("0"), "1Gi", BSI),
    (Q("0"), Q("100m"), "-100m", DSI),
    (Q("1"), Q("1m"), "999m", DSI),
    (Q("2Ki"), Q("1Ki"), "1Ki", BSI),
    (Q("0"), Q(str(-(2**63))), "9223372036854775808", DSI),  # upstream: no wrap at MinInt64
]


@pytest.mark.parametrize(("a", "b", "expected", "fmt"), SUB)
def test_sub(a: Quantity, b: Quantity, expected: str, fmt: Format) -> None:
    difference = a - b
    assert str(difference) == expected
    assert difference.format is fmt


def test_zero_result_then_add_takes_new_format() -> None:
    zero = Q("1Mi") - Q("1Mi")
    assert zero.format is BSI
    assert str(zero + Q("1k")) == "1k"


NEG = [
    (Q("9.01"), "-9010m"),  # upstream TestQuantityNeg
    (Q("0"), "0"),
    (Q("-1Ki"), "1Ki"),
    (Quantity.from_int(10, BSI), "-10"),
    (Quantity.from_int(-(2**63)), "9223372036854775808"),
]


@pytest.mark.parametrize(("q", "expected"), NEG)
def test_neg(q: Quantity, expected: str) -> None:
    negated = -q
    assert str(negated) == expected
    assert negated.format is q.format
    assert -negated == q


MUL = [
    # upstream TestMul (value, int factor)
    (Quantity.from_int(10), 10, "100"),
    (Quantity.from_int(10), 1, "10"),
    (Quantity.from_int(0), 50, "0"),
    (Quantity.from_int(50), 0, "0"),
    (Quantity.from_int(10), -10, "-100"),
    (Quantity.from_int(-50), -50, "2500"),
    (Quantity.from_int(MAX_INT64), 2, "18446744073709551614"),  # exact, no overflow
    (Quantity.from_int(MAX_INT64), 10, "92233720368547758070"),
    (Quantity.from_int(-(2**63)), -1, "9223372036854775808"),
    (Q("1Ki"), 3, "3Ki"),
    (Q("1500m"), 2, "3"),
    # by a Fraction: exact when whole nano-units, else away from zero to the next 1n
    (Q("1Gi"), Fraction(1, 2), "512Mi"),
    (Q("1Gi"), Fraction(3, 2), "1536Mi"),
    (Q("3"), Fraction(1, 3), "1"),
    (Q("1"), Fraction(1, 3), "333333334n"),
    (Q("-1"), Fraction(1, 3), "-333333334n"),
    # by a Quantity: its value is the factor, same rounding
    (Q("2"), Q("500m"), "1"),
    (Q("1Ki"), Q("2"), "2Ki"),
    (Q("100m"), Q("100m"), "10m"),
    (Q("1n"), Q("1n"), "1n"),
    (Q("-1n"), Q("1n"), "-1n"),
]


@pytest.mark.parametrize(("q", "factor", "expected"), MUL)
def test_mul(q: Quantity, factor: object, expected: str) -> None:
    product = q * factor
    assert str(product) == expected
    assert product.format is q.format
    if not isinstance(factor, Quantity):
        assert str(factor * q) == expected


def test_sum_uses_zero_as_identity() -> None:
    assert str(sum([Q("1Gi"), Q("1Gi")])) == "2Gi"
    assert sum([Q("100m")] * 10) == Q("1")
    assert str(sum([Q("1Gi"), Q("500m")])) == "1073741824500m"
    assert str(0 - Q("1Gi")) == "-1Gi"
    assert Q("5") - 0 == Q("5")


@pytest.mark.parametrize(
    "operation",
    [
        lambda q: q + 1,
        lambda q: 1 + q,
        lambda q: q - 1,
        lambda q: q + "1",
        lambda q: q + True,
        lambda q: q * 0.5,
        lambda q: 0.5 * q,
        lambda q: q * True,
        lambda q: q * "2",
        lambda q: q < "1",
        lambda q: q < 0.5,
    ],
)
def test_unsupported_operands_raise_type_error(operation) -> None:
    with pytest.raises(TypeError):
        operation(Q("1"))


# --------------------------------------------------------------------------------------------
# comparison, hashing, immutability
# --------------------------------------------------------------------------------------------

CMP = [
    ("0", "0", 0),  # upstream TestQuantityCmp
    ("100m", "50m", 1),
    ("50m", "100m", -1),
    ("10000T", "100Gi", 1),
    ("1k", "1000", 0),
    ("1e3", "1k", 0),
    ("1Ki", "1k", 1),
    ("-1", "1n", -1),
    ("-1Ki", "-1k", -1),
    ("1E", "999999999999999999", 1),
    ("8Ei", "9Ei", 0),  # both capped
]


@pytest.mark.parametrize(("x", "y", "expected"), CMP)
def test_compare(x: str, y: str, expected: int) -> None:
    a, b = Q(x), Q(y)
    assert (a == b) == (expected == 0)
    assert (a != b) == (expected != 0)
    assert (a < b) == (expected < 0)
    assert (a <= b) == (expected <= 0)
    assert (a > b) == (expected > 0)
    assert (a >= b) == (expected >= 0)


def test_compare_with_numbers() -> None:
    assert Q("-1n") < 0
    assert Q("0") == 0
    assert Q("0Ki") == 0
    assert Q("1n") > 0
    assert 0 < Q("1n")
    assert Q("1k") == 1000
    assert Q("500m") == Fraction(1, 2)
    assert Q("1") != True  # noqa: E712 - bools are not numbers here
    assert Q("1k") != "1k"


def test_sort_order() -> None:
    texts = ["1Gi", "1G", "1Mi", "999M", "-1", "0", "1n", "-1Ki"]
    assert [str(q) for q in sorted(Q(t) for t in texts)] == [
        "-1Ki", "-1", "0", "1n", "1Mi", "999M", "1G", "1Gi",
    ]


def test_hash_follows_value() -> None:
    assert len({Q("1k"), Q("1000"), Q("1e3"), Q("1000000m")}) == 1
    assert hash(Q("1k")) == hash(1000)
    assert hash(Q("500m")) == hash(Fraction(1, 2))
    assert {Q("1Ki"): "x"}[Q("1024")] == "x"


def test_is_zero_and_sign() -> None:
    assert [Q(t).sign() for t in ("-1n", "0", "-0", "1n", "1Ei")] == [-1, 0, 0, 1, 1]
    assert [Q(t).is_zero() for t in ("0", "0Ki", "1n", "-1n")] == [True, True, False, False]


def test_zero_is_truthy() -> None:
    # `q or default` must only replace a missing quantity, not a zero one.
    assert bool(Q("0")) is True


def test_as_fraction() -> None:
    assert Q("1.5Gi").as_fraction() == Fraction(1610612736)
    assert Q("1n").as_fraction() == Fraction(1, 10**9)
    assert isinstance(Q("1").as_fraction(), Fraction)


def test_immutable() -> None:
    q = Q("1")
    with pytest.raises(AttributeError):
        q._nanos = 5  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        q.format = BSI  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del q._nanos  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        q.extra = 1  # type: ignore[attr-defined]
    assert str(q) == "1"


def test_repr_evaluates_back() -> None:
    q = Q("1.5")
    assert repr(q) == "Quantity('1500m')"
    assert eval(repr(q), {"Quantity": Quantity}) == q
    assert repr(Q("-1Ki")) == "Quantity('-1Ki')"


@pytest.mark.parametrize("q", [Q("1.5Gi"), Quantity.from_milli(1024, BSI), Q("1e3"), Q("-7n")])
def test_pickle_and_copy_keep_value_and_format(q: Quantity) -> None:
    for clone in (pickle.loads(pickle.dumps(q)), copy.copy(q), copy.deepcopy(q)):
        assert clone == q
        assert clone.format is q.format
        assert str(clone) == str(q)


# --------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------

SUFFIXES = {
    "n": (10, -9), "u": (10, -6), "m": (10, -3), "": (10, 0), "k": (10, 3), "M": (10, 6),
    "G": (10, 9), "T": (10, 12), "P": (10, 15), "E": (10, 18),
    "Ki": (2, 10), "Mi": (2, 20), "Gi": (2, 30), "Ti": (2, 40), "Pi": (2, 50), "Ei": (2, 60),
}


def away(x: Fraction) -> int:
    """x rounded away from zero to an integer (independent of the module's helper)."""
    magnitude = -(-abs(x.numerator) // x.denominator)
    return magnitude if x >= 0 else -magnitude


@st.composite
def quantity_texts(draw) -> tuple[str, Fraction, Format]:
    """A valid spelling, with the value and format upstream's ParseQuantity gives it."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text("0123456789", max_size=22))
    fraction = draw(st.none() | st.text("0123456789", max_size=22))
    if not whole and not fraction:
        whole = draw(st.text("0123456789", min_size=1, max_size=5))
    if draw(st.booleans()):
        suffix = draw(st.sampled_from(sorted(SUFFIXES)))
        base, power = SUFFIXES[suffix]
        fmt = BSI if base == 2 else DSI
    else:
        exponent = draw(st.integers(-40, 40))
        letter = draw(st.sampled_from("eE"))
        plus = "+" if exponent >= 0 and draw(st.booleans()) else ""
        suffix, base, power, fmt = f"{letter}{plus}{exponent}", 10, exponent, DEXP
    text = sign + whole + ("" if fraction is None else "." + fraction) + suffix
    fraction = fraction or ""
    value = Fraction(int(whole + fraction or "0"), 10 ** len(fraction)) * Fraction(base) ** power
    value = Fraction(away(value * 10**9), 10**9)  # finer than 1n rounds away from zero
    if fmt is BSI:
        value = min(value, Fraction(MAX_INT64))
        if 0 < value < 1:
            fmt = DSI
    return text, -value if sign == "-" else value, fmt


FORMATS = st.sampled_from([DSI, BSI, DEXP])


@st.composite
def quantities(draw) -> Quantity:
    """Any quantity parsing can produce: whole nano-units, BinarySI within the cap."""
    fmt = draw(FORMATS)
    if fmt is BSI and draw(st.booleans()):
        nanos = draw(st.integers(-1023, 1023)) * 1024 ** draw(st.integers(0, 5)) * 10**9
    else:
        nanos = draw(st.integers(-(10**30), 10**30) | st.integers(-(10**12), 10**12))
        nanos *= 10 ** draw(st.integers(0, 12))
        if fmt is BSI:
            nanos = max(-MAX_INT64 * 10**9, min(nanos, MAX_INT64 * 10**9))
    return Quantity.from_fraction(Fraction(nanos, 10**9), fmt)


BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
FAST = settings(max_examples=100, deadline=None)
CANONICAL_FORM = re.compile(r"-?[1-9][0-9]*(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e-?[1-9][0-9]*)?|0")


@FAST
@given(quantity_texts())
def test_parse_matches_exact_model(case: tuple[str, Fraction, Format]) -> None:
    text, value, fmt = case
    q = Q(text)
    assert q.as_fraction() == value
    assert q.format is fmt


@FAST
@given(quantity_texts())
def test_printed_form_round_trips_parsed_value(case: tuple[str, Fraction, Format]) -> None:
    q = Q(case[0])
    assert Q(str(q)) == q


@FAST
@given(quantities())
def test_parse_of_str_is_identity_and_str_is_idempotent(q: Quantity) -> None:
    printed = str(q)
    again = Q(printed)
    assert again == q
    reprinted = str(again)
    assert str(Q(reprinted)) == reprinted  # canonical of canonical is a fixed point
    if q.format is not BSI or printed.endswith(BINARY_SUFFIXES):
        assert reprinted == printed
    # else: BinarySI printed without a binary suffix ("2000") reparses as DecimalSI ("2k"),
    # exactly as upstream does.


def test_binary_si_without_binary_suffix_reparses_as_decimal_si() -> None:
    q = Q("1.953125Ki")
    assert (str(q), q.format) == ("2000", BSI)
    assert (str(Q(str(q))), Q(str(q)).format) == ("2k", DSI)


@FAST
@given(quantities())
def test_str_is_canonical(q: Quantity) -> None:
    printed = str(q)
    assert CANONICAL_FORM.fullmatch(printed), printed
    number = re.match(r"-?[0-9]+", printed).group()
    suffix = printed[len(number):]
    # The largest suffix that loses nothing: the mantissa cannot move up one more step.
    magnitude = abs(q.as_fraction())
    twos = (magnitude.numerator & -magnitude.numerator).bit_length() - 1
    if q.format is BSI and magnitude.denominator == 1 and magnitude >= 1024 and twos < 70:
        # Printed in powers of 1024 (upstream: whole values of at least 1024).
        assert suffix in BINARY_SUFFIXES + ("",)
        assert (suffix != "") == (twos >= 10)
        assert suffix == "Ei" or int(number) % 1024 != 0
    else:
        assert suffix not in BINARY_SUFFIXES
        assert not number.endswith("000")


@FAST
@given(quantities(), quantities(), quantities())
def test_addition_is_exact_commutative_and_associative(a: Quantity, b: Quantity, c: Quantity) -> None:
    assert (a + b).as_fraction() == a.as_fraction() + b.as_fraction()
    assert a + b == b + a
    assert (a + b) + c == a + (b + c)
    assert sum([a, b, c]).as_fraction() == a.as_fraction() + b.as_fraction() + c.as_fraction()
    assert (a - b) + b == a
    assert a - b == a + (-b)


@FAST
@given(quantities(), quantities())
def test_ordering_and_hash_follow_fraction(a: Quantity, b: Quantity) -> None:
    x, y = a.as_fraction(), b.as_fraction()
    assert (a < b, a <= b, a == b, a >= b, a > b) == (x < y, x <= y, x == y, x >= y, x > y)
    assert hash(a) == hash(x)


@FAST
@given(quantities(), st.integers(-(10**6), 10**6), st.fractions(max_denominator=10**6))
def test_scaling(q: Quantity, k: int, f: Fraction) -> None:
    assert (q * k).as_fraction() == q.as_fraction() * k
    exact = q.as_fraction() * f
    scaled = (q * f).as_fraction()
    assert scaled == Fraction(away(exact * 10**9), 10**9)
    assert abs(scaled) >= abs(exact) and abs(scaled - exact) < Fraction(1, 10**9)


@FAST
@given(quantities())
def test_integer_accessors_round_away_from_zero(q: Quantity) -> None:
    x = q.as_fraction()
    assert q.value() == away(x)
    assert q.milli_value() == away(x * 1000)
    assert q.scaled_value(3) == away(x / 1000)
