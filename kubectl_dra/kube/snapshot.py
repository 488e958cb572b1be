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
    """Everything in a snapshot, with problems recorded instead of raised (except a single file
    that cannot be read at all: then there is nothing to show)."""
    inventory = Inventory()
    for file in snapshot_files(path):
        try:
            documents = read_documents(file)
        except InputError as exc:
            if file == path:
                raise
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


def snapshot_about(path: Path) -> dict | None:
    """The marker of a directory ``kubectl dra snapshot`` wrote; None for hand-made snapshots."""
    marker = path / MARKER
    if not path.is_dir() or not marker.is_file():
        return None
    try:
        about = yaml.load(marker.read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return about if isinstance(about, dict) and isinstance(about.get("kinds"), dict) else None


class SnapshotSource:
    """Objects from snapshot files, filtered per request the way a server would filter them.

    A directory written by ``kubectl dra snapshot`` says which kinds it holds: a kind it could
    not read then is reported as unread now, never as "none"."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._loaded: Inventory | None = None
        self._problems_reported = False
        self._said: set[str] = set()
        self.about = snapshot_about(self.path)

    @property
    def description(self) -> str:
        return f"snapshot {self.path}"

    def _load(self, inventory: Inventory) -> Inventory:
        if self._loaded is None:
            with gc_paused():
                self._loaded = load_snapshot(self.path)
        if not self._problems_reported:  # a command may read in two rounds; say each problem once
            inventory.problems.extend(self._loaded.problems)
            self._problems_reported = True
        inventory.documents.update(self._loaded.documents)
        return self._loaded

    def prime(self, requests: Iterable[ReadRequest]) -> list:
        """Nothing to ask for ahead: the files are read once, whole."""
        return []

    def read(self, requests: Iterable[ReadRequest]) -> Inventory:
        inventory = Inventory()
        self._load(inventory)
        for request in requests:
            inventory.extend(self.stream(request, inventory))
        return inventory

    def stream(self, request: ReadRequest, inventory: Inventory) -> Iterator[KubeObject]:
        """One kind's objects, filtered as a server filters them (problems go to ``inventory``)."""
        loaded = self._load(inventory)
        model = request.model
        if not self._held(request, inventory):
            return
        labels, fields = label_matcher(request.label_selector), field_matcher(request.field_selector)
        for obj in loaded.all(model):
            if model.NAMESPACED and request.namespace and obj.namespace != request.namespace:
                continue
            if labels(obj.metadata.labels) and fields(obj.raw) and (request.keep is None or request.keep(obj)):
                yield obj
        inventory.read_kinds.add(model.KIND)

    def _held(self, request: ReadRequest, inventory: Inventory) -> bool:
        """Whether the snapshot holds the kind; say once what it lacks."""
        if self.about is None:
            return True
        model = request.model
        if model.KIND not in self.about["kinds"]:
            reason = (self.about.get("notRead") or {}).get(model.KIND)
            inventory.problem(f"snapshot {self.path} holds no {model.KIND} objects: they could not be read when it "
                              f"was taken" + (f" ({reason})" if reason else ""), kind=model.KIND,
                              severity="error" if request.required else "warning")
            return False
        taken_in = self.about.get("namespace")
        if model.NAMESPACED and taken_in and request.namespace != taken_in and "namespace" not in self._said:
            self._said.add("namespace")
            inventory.problem(f"snapshot {self.path} holds namespace {taken_in} only (it was taken with "
                              f"-n {taken_in})", kind=model.KIND, severity="warning")
        return True


MARKER = ".kubectl-dra-snapshot.yaml"
"""Written last into every snapshot directory: which kinds it holds (a kind missing here was not
read, which is not the same as "none exist"), from where, and which namespace."""


def check_target(directory: Path, overwrite: bool) -> None:
    """Refuse, before anything is read, to write where a snapshot would mix with other files."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"cannot write snapshot to {directory}: it exists and is not a directory")
    if not directory.is_dir() or not any(directory.iterdir()):
        return
    if not overwrite:
        raise InputError(f"{directory} is not empty: pass --overwrite to replace the snapshot in it, "
                         "or choose a new directory")
    if not (directory / MARKER).is_file():
        raise InputError(f"{directory} is not empty and holds no snapshot ({MARKER} is missing): "
                         "not replacing it, even with --overwrite; choose a new directory")


def write_snapshot(directory: Path, objects_by_kind: dict[type[KubeObject], list[dict]],
                   about: dict | None = None) -> list[Path]:
    """One ``kind: List`` file per kind, named ``<plural>.<group>.yaml``, plus the marker; returns
    the files. Written beside the target and renamed into place, so an earlier snapshot in
    ``directory`` is replaced whole and a failed write leaves it as it was."""
    import shutil

    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = directory.parent / f".{directory.name}.new-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()  # the umask applies, as for mkdir
    names = []
    try:
        for model, items in objects_by_kind.items():
            name = f"{model.PLURAL}.{model.GROUP}.yaml" if model.GROUP else f"{model.PLURAL}.yaml"
            document = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
            (staging / name).write_text(yaml.dump(document, Dumper=_Dumper, sort_keys=False,
                                                  default_flow_style=False), encoding="utf-8")
            names.append(name)
        marker = {**(about or {}), "kinds": {model.KIND: len(items) for model, items in objects_by_kind.items()}}
        (staging / MARKER).write_text("# written by kubectl dra snapshot; read back with --snapshot DIR\n"
                                      + yaml.dump(marker, Dumper=_Dumper, sort_keys=False), encoding="utf-8")
        if directory.exists():  # check_target: empty, or an earlier snapshot
            retired = directory.parent / f".{directory.name}.old-{os.getpid()}"
            os.rename(directory, retired)
            os.rename(staging, directory)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.rename(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [directory / name for name in names]
