"""CDI specs as the runtime resolves them: which fully qualified device IDs
(``vendor/class=name``) a node can inject into a container.

The runtime (the CDI library in containerd and CRI-O) reads every ``*.json`` and ``*.yaml`` file
directly inside each spec directory (subdirectories are skipped) and indexes each device by the
spec's ``kind`` and the device's ``name``; file names play no part. A later directory has the
higher priority and wins; the same ID twice in one directory is a conflict, and the runtime drops
it altogether (even when a later directory defines it too), so it no longer resolves. A file that does not parse is skipped with an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from kubectl_dra.decoding import TooDeep, yaml_document
from kubectl_dra.text import plural

KIND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SpecError(ValueError):
    pass


def parse_spec(text: str) -> tuple[str, list[str]]:
    """(kind, device names) of one spec file's text (JSON is YAML)."""
    try:
        doc = yaml_document(text, _LOADER)
    except TooDeep as exc:
        raise SpecError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"not YAML or JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, dict):
        raise SpecError("not a CDI spec (an object with cdiVersion, kind and devices)")
    if not isinstance(doc.get("cdiVersion"), str):
        raise SpecError("no cdiVersion")
    kind = doc.get("kind")
    if not isinstance(kind, str) or not KIND.match(kind):
        raise SpecError(f"invalid kind {kind!r} (want vendor/class)")
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        raise SpecError("no devices")
    names = []
    for device in devices:
        name = device.get("name") if isinstance(device, dict) else None
        if not isinstance(name, str) or not name:
            raise SpecError("a device without a name")
        names.append(name)
    return kind, names


@dataclass
class CDIIndex:
    """What resolves, and why something does not."""

    dirs: tuple[str, ...]
    devices: dict[str, str] = field(default_factory=dict)  # qualified ID -> the spec file that defines it
    conflicts: dict[str, tuple[str, str]] = field(default_factory=dict)  # ID -> the two files in one directory
    errors: dict[str, str] = field(default_factory=dict)  # file -> why the runtime skips it

    def add(self, priority: int, path: str, text: str, chosen: dict[str, tuple[int, str]]) -> None:
        try:
            kind, names = parse_spec(text)
        except SpecError as exc:
            self.errors[path] = str(exc)
            return
        for name in names:
            qualified = f"{kind}={name}"
            seen = chosen.get(qualified)
            if seen is not None and seen[0] == priority:  # recorded, and final even if a later directory defines it
                self.conflicts.setdefault(qualified, (seen[1], path))
                continue
            if seen is None or priority > seen[0]:
                chosen[qualified] = (priority, path)

    def finish(self, chosen: dict[str, tuple[int, str]]) -> "CDIIndex":
        self.devices = {q: path for q, (_, path) in chosen.items() if q not in self.conflicts}
        return self

    def why_unresolved(self, qualified: str) -> str | None:
        """None when the ID resolves; otherwise the reason in a few words."""
        if qualified in self.conflicts:
            first, second = self.conflicts[qualified]
            return f"defined twice at the same priority ({first}, {second}), so the runtime drops it"
        if qualified in self.devices:
            return None
        if "=" not in qualified:
            return "not a fully qualified CDI device ID (vendor/class=name)"
        kind = qualified.split("=", 1)[0]
        broken = [path for path in self.errors]
        hint = f"; {plural(len(broken), 'spec file')} could not be parsed: " + ", ".join(
            f"{path} ({self.errors[path]})" for path in broken[:3]) if broken else ""
        return f"no spec in {', '.join(self.dirs)} defines a {kind} device of that name{hint}"


def build_index(dirs: tuple[str, ...], files: list[tuple[int, str, str]]) -> CDIIndex:
    """``files``: (directory index, path, text) in the runtime's scan order."""
    index, chosen = CDIIndex(dirs=dirs), {}
    for priority, path, text in files:
        index.add(priority, path, text, chosen)
    return index.finish(chosen)
