"""Label and field selectors evaluated locally, for snapshots (a live server filters itself).

Grammar as kubectl accepts it: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``,
``a``, ``!a``; requirements joined by commas (AND).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from kubectl_dra.errors import InputError

_SET_RE = re.compile(r"^\s*([^\s!=,()]+)\s+(in|notin)\s+\(([^()]*)\)\s*$")
_EQ_RE = re.compile(r"^\s*([^\s!=,()]+)\s*(==|=|!=)\s*([^\s!=,()]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([^\s!=,()]+)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # =, !=, in, notin, exists, !exists
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator == "=":
            return present and value == self.values[0]
        if self.operator == "!=":
            return not present or value != self.values[0]
        if self.operator == "in":
            return present and value in self.values
        if self.operator == "notin":
            return not present or value not in self.values
        if self.operator == "exists":
            return present
        return not present


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside ``( ... )``."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def parse_label_selector(text: str | None) -> tuple[Requirement, ...]:
    if not text or not text.strip():
        return ()
    requirements = []
    for part in _split_top_level(text):
        if m := _SET_RE.match(part):
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            requirements.append(Requirement(m.group(1), m.group(2), values))
        elif m := _EQ_RE.match(part):
            op = "=" if m.group(2) in ("=", "==") else "!="
            requirements.append(Requirement(m.group(1), op, (m.group(3),)))
        elif m := _EXISTS_RE.match(part):
            requirements.append(Requirement(m.group(2), "!exists" if m.group(1) else "exists"))
        else:
            raise InputError(f'invalid label selector "{text}": cannot parse "{part.strip()}"')
    return tuple(requirements)


def parse_field_selector(text: str | None) -> tuple[Requirement, ...]:
    if not text or not text.strip():
        return ()
    requirements = []
    for part in text.split(","):
        m = _EQ_RE.match(part)
        if not m:
            raise InputError(f'invalid field selector "{text}": cannot parse "{part.strip()}"')
        op = "=" if m.group(2) in ("=", "==") else "!="
        requirements.append(Requirement(m.group(1), op, (m.group(3),)))
    return tuple(requirements)


def label_matcher(text: str | None) -> Callable[[Mapping[str, str]], bool]:
    requirements = parse_label_selector(text)
    return lambda labels: all(r.matches(labels) for r in requirements)


def field_value(raw: dict, path: str) -> str:
    """The value a server compares a field selector with (missing = empty string)."""
    node: object = raw
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return "" if node is None else str(node)


def field_matcher(text: str | None) -> Callable[[dict], bool]:
    requirements = parse_field_selector(text)
    return lambda raw: all(r.matches({r.key: field_value(raw, r.key)}) for r in requirements)
