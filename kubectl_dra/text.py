"""Counted nouns for messages: "1 pod", "2 pods", never "1 pods" or "pod(s)"."""

from __future__ import annotations

IRREGULAR = {"entry": "entries", "match": "matches", "NodeClass": "NodeClasses"}


def plural(n: int, singular: str, many: str | None = None) -> str:
    """``n`` and the noun in the form the number takes; ``many`` for a plural not made by "s"."""
    if n == 1:
        return f"{n} {singular}"
    return f"{n} {many or IRREGULAR.get(singular) or singular + 's'}"
