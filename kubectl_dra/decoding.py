"""JSON and YAML from outside the program, with their nesting bounded.

Every parser Python has recurses once per level of nesting: 100,000 nested arrays (200 KB) raise
RecursionError in ``json``, msgspec and PyYAML's constructor, and a document just under the
interpreter's limit parses but breaks the first thing that walks it later (pydantic, the YAML
writer, the printers). Kubernetes objects nest a few dozen levels at most, so each reader decodes
through here: a document nested deeper than :data:`MAX_DEPTH` is a :class:`TooDeep` (a
``ValueError``, like every other malformed document) before anything else sees it. Each caller
names its file or source in the message, as it does for any malformed input.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

MAX_DEPTH = 100
"""Deepest nesting accepted. A Pod's deepest field (a node affinity term's values) is 9 levels
down, a CRD's OpenAPI schema rarely 30; a 100-level document still leaves the interpreter's
recursion limit (1000) for whatever walks it."""


class TooDeep(ValueError):
    """A document nested deeper than :data:`MAX_DEPTH`."""

    def __init__(self) -> None:
        super().__init__(f"nested more than {MAX_DEPTH} levels deep")


def check_depth(value: Any, *, shared: bool = False) -> Any:
    """``value`` itself, or :class:`TooDeep`. Iterative: it must not recurse over what it checks.
    ``shared``: the value may hold one object in several places (YAML aliases): each is walked
    again only from a deeper level than before, so an alias bomb costs its distinct objects, not
    its expansion, and a cycle ends as too deep."""
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    seen: dict[int, int] = {}
    while stack:
        node, depth = pop()
        if depth > MAX_DEPTH:
            raise TooDeep()
        if shared:
            if seen.get(id(node), 0) >= depth:
                continue
            seen[id(node)] = depth
        children = node.values() if type(node) is dict else node if type(node) is list else ()
        for child in children:
            if type(child) is dict or type(child) is list:
                push((child, depth + 1))
    return value


def json_value(data: str | bytes | bytearray) -> Any:
    """``json.loads`` bounded in depth; a malformed document raises ``json.JSONDecodeError``."""
    try:
        return check_depth(json.loads(data))
    except RecursionError:
        raise TooDeep() from None


def yaml_documents(text: str | bytes, loader: Any) -> list:
    """Every document of a YAML stream (``None`` documents dropped), bounded in depth; a malformed
    stream raises ``yaml.YAMLError``."""
    try:
        return [check_depth(doc, shared=True) for doc in yaml.load_all(text, Loader=loader) if doc is not None]
    except RecursionError:
        raise TooDeep() from None
    except yaml.YAMLError as exc:
        _libyaml_depth(exc)
        raise


def yaml_document(text: str | bytes, loader: Any) -> Any:
    """One YAML document (``yaml.load``), bounded in depth."""
    try:
        return check_depth(yaml.load(text, Loader=loader), shared=True)
    except RecursionError:
        raise TooDeep() from None
    except yaml.YAMLError as exc:
        _libyaml_depth(exc)
        raise


def _libyaml_depth(exc: Exception) -> None:
    """libyaml stops at its own nesting limit (1000) with a scanner error: the same fault, said the same way."""
    if "nesting depth" in str(getattr(exc, "problem", "") or ""):
        raise TooDeep() from None
