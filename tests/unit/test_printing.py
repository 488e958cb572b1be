"""kubectl-style tables, ages, selectors and the environment's colour decision."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

import pytest

from kubectl_dra.env import Environment, program_name
from kubectl_dra.errors import InputError
from kubectl_dra.kube.selectors import field_matcher, label_matcher
from kubectl_dra.printers.table import Column, cell, human_age, render

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("delta,expected", [
    (timedelta(seconds=-5), "<invalid>"), (timedelta(seconds=-1), "0s"), (timedelta(seconds=0), "0s"),
    (timedelta(seconds=119), "119s"), (timedelta(minutes=2), "2m"), (timedelta(minutes=5, seconds=7), "5m7s"),
    (timedelta(minutes=10, seconds=30), "10m"), (timedelta(minutes=179), "179m"), (timedelta(hours=3), "3h"),
    (timedelta(hours=7, minutes=59), "7h59m"), (timedelta(hours=8, minutes=30), "8h"), (timedelta(hours=47), "47h"),
    (timedelta(days=2), "2d"), (timedelta(days=3, hours=4), "3d4h"), (timedelta(days=8), "8d"),
    (timedelta(days=729), "729d"), (timedelta(days=730), "2y"), (timedelta(days=800), "2y70d"),
    (timedelta(days=365 * 9), "9y"),
])
def test_human_age_matches_kubectl(delta, expected):
    assert human_age(NOW - delta, NOW) == expected


def test_table_layout_padding_and_wide_columns():
    columns = [Column("NAME"), Column("STATE"), Column("EXTRA", wide_only=True)]
    rows = [["a", "pending", "x"], ["longer-name", "allocated,reserved", "y"]]
    assert render(columns, rows) == (
        "NAME          STATE\n"
        "a             pending\n"
        "longer-name   allocated,reserved\n")
    assert render(columns, rows, wide=True).splitlines()[0] == "NAME          STATE                EXTRA"
    assert render(columns, rows, no_headers=True).splitlines()[0] == "a             pending"


def test_cells_never_contain_spaces_and_mark_empty_values():
    assert cell(["a", "b"]) == "a,b"
    assert cell([]) == "<none>"
    assert cell(None) == "<unset>"
    assert cell("two words") == "two-words"


def test_colour_codes_do_not_break_alignment():
    """Colour is marked by Style and made real at the output boundary; the marks take no room."""
    from kubectl_dra.printers.style import Style
    from kubectl_dra.text import to_terminal

    red = Style(True)
    columns = [Column("NAME"), Column("STATE")]
    rows = [["a", "ok"], ["bbbb", "bad"]]
    text = to_terminal(render(columns, rows, colorize=lambda i, t: red(t, "red") if i == 0 else t))
    assert text.splitlines()[1] == "\x1b[31ma\x1b[0m      ok"
    assert text.splitlines()[2] == "\x1b[31mbbbb\x1b[0m   bad"
    # cells that already carry colour (no colorize): still measured without the codes
    coloured = [[red("a", "green"), "ok"], ["bbbb", red("bad", "red")]]
    assert to_terminal(render(columns, coloured, no_headers=True)).splitlines() == [
        "\x1b[32ma\x1b[0m      ok", "bbbb   \x1b[31mbad\x1b[0m"]
    # an escape sequence that came with the data is not colour: escaped, and measured as printed
    forged = [["\x1b[32ma", "ok"], ["bbbb", "bad"]]
    assert to_terminal(render(columns, forged, no_headers=True)).splitlines() == ["^[[32ma   ok", "bbbb      bad"]


def test_short_last_cells_leave_no_trailing_spaces():
    columns = [Column("A"), Column("B"), Column("C")]
    text = render(columns, [["x", "yyyyyy", ""], ["", "", "z"]], no_headers=True)
    assert text == "x   yyyyyy\n" + " " * 13 + "z\n"


@pytest.mark.parametrize("selector,labels,expected", [
    ("app=web", {"app": "web"}, True), ("app==web", {"app": "web"}, True), ("app=web", {"app": "db"}, False),
    ("app!=web", {}, True), ("app!=web", {"app": "web"}, False),
    ("tier in (a, b)", {"tier": "b"}, True), ("tier in (a,b)", {"tier": "c"}, False),
    ("tier notin (a)", {}, True), ("tier notin (a)", {"tier": "a"}, False),
    ("gpu", {"gpu": ""}, True), ("gpu", {}, False), ("!gpu", {}, True), ("!gpu", {"gpu": "1"}, False),
    ("app=web,tier in (a,b),!legacy", {"app": "web", "tier": "a"}, True),
    ("app=web,tier in (a,b),!legacy", {"app": "web", "tier": "a", "legacy": "y"}, False),
    ("", {"anything": "x"}, True),
])
def test_label_selectors(selector, labels, expected):
    assert label_matcher(selector)(labels) is expected


def test_field_selectors_read_nested_fields():
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    assert field_matcher("spec.nodeName=n1,status.phase!=Failed")(pod)
    assert not field_matcher("spec.nodeName=n2")(pod)
    assert field_matcher("spec.missing=")(pod)


@pytest.mark.parametrize("bad", ["app in (a", "a=b=c", "=x"])
def test_bad_selectors_are_input_errors(bad):
    with pytest.raises(InputError, match="invalid label selector"):
        label_matcher(bad)


def test_colour_follows_tty_no_color_and_flag():
    assert Environment(out=io.StringIO(), stdout_isatty=True, environ={}).use_color
    assert not Environment(out=io.StringIO(), stdout_isatty=False, environ={}).use_color
    assert not Environment(out=io.StringIO(), stdout_isatty=True, environ={"NO_COLOR": "1"}).use_color
    assert Environment(out=io.StringIO(), stdout_isatty=False, color="always", environ={}).use_color
    assert not Environment(out=io.StringIO(), stdout_isatty=True, color="never", environ={}).use_color


def test_program_name_under_kubectl():
    assert program_name("/usr/local/bin/kubectl-dra") == "kubectl dra"
    assert program_name("dra-node-agent") == "dra-node-agent"
