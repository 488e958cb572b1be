"""Snapshot files (DESIGN §4.1): reading a file or directory of objects, and writing one.

A file holds one object, a ``kind: List`` or several YAML documents. Unknown kinds are ignored;
a malformed file or invalid object is reported (file, position, reason) and the rest still loads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from kubectl_dra.errors import InputError
from kubectl_dra.gcpause import gc_paused
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.selectors import field_matcher, label_matcher
from kubectl_dra.model.base import KubeObject
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import invalid_field_problems, parse_object

SUFFIXES = (".yaml", ".yml", ".json")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def snapshot_files(path: Path) -> list[Path]:
    if not path.exists():
        raise InputError(f"snapshot {path}: no such file or directory")
    if path.is_file():
        return [path]
    files = [Path(root) / name for root, _, names in os.walk(path) for name in names
             if name.endswith(SUFFIXES) and not name.startswith(".")]
    return sorted(files)


def read_documents(path: Path) -> list:
    """Every document of one file, or :class:`InputError` naming the file and position."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    if path.suffix == ".json":
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    try:
        return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}: invalid YAML{where}: {reason}") from None


def _flatten(doc) -> Iterator[dict]:
    if isinstance(doc, dict) and (doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List")) \
            and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _flatten(item)
    else:
        yield doc


def load_snapshot(path: Path) -> Inventory:
    """Everything in a snapshot, with problems recorded instead of raised."""
    inventory = Inventory()
    for file in snapshot_files(path):
        try:
            documents = read_documents(file)
        except InputError as exc:
            inventory.problem(str(exc))
            continue
        for doc in documents:
            for raw in _flatten(doc):
                try:
                    obj = parse_object(raw)
                except InputError as exc:
                    inventory.problem(f"{file}: {exc}")
                    continue
                if obj is not None:
                    inventory.add(obj)
                    if not isinstance(obj, dict) and obj.invalid_fields:
                        for problem in invalid_field_problems(obj):
                            inventory.problem(f"{file}: {problem}", kind=obj.KIND)
    return inventory


class SnapshotSource:
    """Objects from snapshot files, filtered per request the way a server would filter them."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._loaded: Inventory | None = None
        self._problems_reported = False

    @property
    def description(self) -> str:
        return f"snapshot {self.path}"

    def read(self, requests: Iterable[ReadRequest]) -> Inventory:
        if self._loaded is None:
            with gc_paused():
                self._loaded = load_snapshot(self.path)
        loaded = self._loaded
        inventory = Inventory()
        if not self._problems_reported:  # a command may read in two rounds; say each problem once
            inventory.problems.extend(loaded.problems)
            self._problems_reported = True
        inventory.documents.update(loaded.documents)
        for request in requests:
            model = request.model
            labels, fields = label_matcher(request.label_selector), field_matcher(request.field_selector)
            for obj in loaded.all(model):
                if model.NAMESPACED and request.namespace and obj.namespace != request.namespace:
                    continue
                if labels(obj.metadata.labels) and fields(obj.raw):
                    inventory.add(obj)
            inventory.read_kinds.add(model.KIND)
        return inventory


def write_snapshot(directory: Path, objects_by_kind: dict[type[KubeObject], list[dict]]) -> list[Path]:
    """One ``kind: List`` file per kind, named ``<plural>.<group>.yaml``; returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for model, items in objects_by_kind.items():
        name = f"{model.PLURAL}.{model.GROUP}.yaml" if model.GROUP else f"{model.PLURAL}.yaml"
        target = directory / name
        document = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
        target.write_text(yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False),
                          encoding="utf-8")
        written.append(target)
    return written
