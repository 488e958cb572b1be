"""What a watched view computed anew on each change prints (commands/watching.py ``changes``): the
rows that are new or differ, in the new view's order, then the ones gone as last shown."""

from __future__ import annotations

import pytest

from kubectl_dra.commands.watching import changes


@pytest.mark.parametrize("shown, current, expected", [
    ({}, {}, []),
    ({}, {"a": 1, "b": 2}, [("ADDED", 1), ("ADDED", 2)]),
    ({"a": 1}, {"a": 1}, []),  # unchanged: no row
    ({"a": 1}, {"a": 2}, [("MODIFIED", 2)]),
    ({"a": 1, "b": 2}, {"b": 2}, [("DELETED", 1)]),  # as last shown
    ({"a": 1, "c": 3}, {"b": 2, "a": 9}, [("ADDED", 2), ("MODIFIED", 9), ("DELETED", 3)]),
])
def test_changes_between_two_views(shown, current, expected):
    assert changes(shown, current) == expected
