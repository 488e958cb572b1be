"""Price arithmetic, exact float64 equality, and the price grammar (docs/kubernetes/nodeoverlay.md §4.1, §1.4)."""

from __future__ import annotations

import pytest

from kubectl_dra.model.karpenter import NodeOverlay
from kubectl_dra.overlays.price import adjusted_price, is_absolute
from kubectl_dra.overlays.validation import schema_errors

# Karpenter's AdjustedPrice test table, compared with == as upstream does.
ADJUSTED_PRICE = [
    ("-10%", 10.0, 9.0),
    ("+10%", 10.0, 11.0),
    ("-50%", 10.0, 5.0),
    ("+100%", 10.0, 20.0),
    ("-100%", 10.0, 0.0),
    ("-200%", 10.0, 0.0),  # the function clamps; the CRD would refuse the string
    ("-25%", 1.5, 1.125),
    ("+0", 10.0, 10.0),
    ("+5", 10.0, 15.0),
    ("-2.5", 10.0, 7.5),
    ("-10", 10.0, 0.0),
    ("-15", 10.0, 0.0),  # clamp
    ("+0.75", 1.25, 2.0),
    ("+100", 0.001, 100.001),
    ("+0.0001", 0.0001, 0.0002),
    ("80.0", 82781.0, 80),  # unsigned: absolute price
    ("", 82781.0, 82781),
]


@pytest.mark.parametrize("change,base,want", ADJUSTED_PRICE)
def test_adjusted_price_table(change, base, want):
    assert adjusted_price(change, base) == want


def test_no_rounding_and_no_stacking_inputs():
    assert adjusted_price("+10%", 0.096) == 0.10560000000000001  # float64, as Karpenter computes it
    assert adjusted_price("-10%", 10.49264) == pytest.approx(9.443376)
    assert is_absolute("8.25") and not is_absolute("+8.25") and not is_absolute("")


@pytest.mark.parametrize("change", ["1e3", "+1e3", "inf", "+-5", "abc", "-"])
def test_unparsable_change_is_refused(change):
    with pytest.raises(ValueError):
        adjusted_price(change, 1.0)


def _overlay(**spec) -> NodeOverlay:
    return NodeOverlay.model_validate({"metadata": {"name": "o"}, "spec": {"requirements": [], **spec}})


def _valid(field: str, value: str) -> bool:
    return not schema_errors(_overlay(**{field: value}))


# (input, valid as priceAdjustment, valid as price); None = not asserted for that field.
GRAMMAR = [
    ("+43", True, False), ("-43", True, False), ("+34.43", True, False), ("-34.43", True, False),
    ("+0", True, False), ("+.5", True, False), ("-.5", True, False), ("-129", True, False),
    ("+1%", True, False), ("-1%", True, False), ("-100%", True, False), ("+100.102%", True, False),
    ("+298%", True, False), ("-99.99999999999%", True, False), ("-0%", True, False), ("+.5%", True, False),
    ("1%", False, False), ("1", False, True), ("1.3", False, True),
    ("-100.0%", False, False), ("-101.1%", False, False), ("-200%", False, False), ("-.5%", False, False),
    ("+5.", False, False), ("-5.%", False, False), ("+-5", False, False), ("+1e3", False, False),
    ("43", False, True), ("34.43", False, True), ("0.0000000232", False, True), ("00.5", False, True),
    ("+42", None, False), (".5", None, False), ("42.", None, False), ("42%", None, False), ("3,14", None, False),
    ("1e10", None, False), ("0x42", None, False), ("forty-two", None, False), ("42a", None, False),
    ("42 ", None, False), (" 42", None, False), ("42.0.0", None, False), ("-", None, False), (".", None, False),
    ("-.42", None, False), ("42\n", False, False), ("٤٢", False, False),
]


@pytest.mark.parametrize("value,adjustment_ok,price_ok", GRAMMAR)
def test_price_and_price_adjustment_grammar(value, adjustment_ok, price_ok):
    if adjustment_ok is not None:
        assert _valid("priceAdjustment", value) is adjustment_ok
    if price_ok is not None:
        assert _valid("price", value) is price_ok


def test_price_and_price_adjustment_together_are_refused():
    errors = schema_errors(_overlay(price="1", priceAdjustment="+1"))
    assert errors == ["spec: Invalid value: cannot set both 'price' and 'priceAdjustment'"]  # the real API server's
