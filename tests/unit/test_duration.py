"""Go's time.ParseDuration, table-driven: the vectors of Go's own time_test.go (parseDurationTests,
go1.24), the form kubelet, kube-scheduler and kubectl read durations in."""

from __future__ import annotations

import pytest

from kubectl_dra.duration import parse_ns, parse_seconds

VALID = [
    ("0", 0), ("5s", 5 * 10**9), ("30s", 30 * 10**9), ("1478s", 1478 * 10**9), ("-5s", -5 * 10**9),
    ("+5s", 5 * 10**9), ("-0", 0), ("+0", 0), ("5.0s", 5 * 10**9), ("5.6s", 5_600_000_000),
    ("5.s", 5 * 10**9), (".5s", 500_000_000), ("1.0s", 10**9), ("1.00s", 10**9), ("1.004s", 1_004_000_000),
    ("1.0040s", 1_004_000_000), ("100.00100s", 100_001_000_000), ("10ns", 10), ("11us", 11_000),
    ("12\u00b5s", 12_000), ("12\u03bcs", 12_000), ("13ms", 13_000_000), ("14s", 14 * 10**9),
    ("15m", 15 * 60 * 10**9), ("16h", 16 * 3600 * 10**9), ("3h30m", (3 * 3600 + 1800) * 10**9),
    ("10.5s4m", 4 * 60 * 10**9 + 10_500_000_000), ("-2m3.4s", -(123_400_000_000)),
    ("1h2m3s4ms5us6ns", 3_723_004_005_006), ("39h9m14.425s", 140_954_425_000_000),
    ("52763797000ns", 52_763_797_000), ("0.3333333333333333333h", 1_200_000_000_000),
    ("9007199254740993ns", 9_007_199_254_740_993), ("9223372036854775807ns", 2**63 - 1),
    ("9223372036854775.807us", 2**63 - 1), ("-9223372036854775808ns", -(2**63)),
    ("0.100000000000000000000h", 360 * 10**9), ("0.830103483285477580700h", 2_988_372_539_827),
]
INVALID = ["", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "1.5", "5s ", " 5s", "9223372036854775808ns",
           "9223372036854775.808us", "1h-5m"]


@pytest.mark.parametrize("text,nanoseconds", VALID)
def test_go_parses_it_so(text, nanoseconds):
    assert parse_ns(text) == nanoseconds
    assert parse_seconds(text) == pytest.approx(nanoseconds / 1e9)


@pytest.mark.parametrize("text", INVALID)
def test_go_refuses_it(text):
    with pytest.raises(ValueError):
        parse_ns(text)
