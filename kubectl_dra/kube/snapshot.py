"""Snapshot files (docs/contracts.md §5): reading a file or directory of objects, and writing one.

A file holds one object, a ``kind: List`` or several YAML documents. Unknown kinds are ignored;
a malformed file or invalid object is reported (file, position, reason) and the rest still loads.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from kubectl_dra.decoding import TooDeep, json_value, yaml_document, yaml_documents
from kubectl_dra.errors import InputError
from kubectl_dra.files import FileReadError, describe, is_stdin, read_bytes, read_text
from kubectl_dra.gcpause import gc_paused
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.selectors import field_matcher, label_matcher, parse_field_selector
from kubectl_dra.model.base import KubeObject
from kubectl_dra.model.inventory import Inventory, Problem
from kubectl_dra.model.registry import invalid_field_problems, models, parse_object

SUFFIXES = (".yaml", ".yml", ".json")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def snapshot_files(path: Path, problems: list[str] | None = None) -> list[Path]:
    """The files a snapshot is read from: ``path`` itself unless it is a directory (a file, ``-``
    for standard input, a pipe), else every ``*.yaml|*.yml|*.json`` under it, hidden ones aside.
    A subdirectory that cannot be listed is added to ``problems``, never skipped silently."""
    if is_stdin(path):
        return [path]
    try:
        info = os.stat(path)
    except OSError as exc:
        try:
            read_bytes(path, label=f"snapshot {path}")  # the same words as for any other file
        except FileReadError:
            raise
        raise InputError(f"snapshot {path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        return [path]

    def unlisted(exc: OSError) -> None:
        if problems is not None:
            problems.append(f"{exc.filename}: cannot list the directory: {exc.strerror or exc} (its files are not read)")

    files = [Path(root) / name for root, _, names in os.walk(path, onerror=unlisted) for name in names
             if name.endswith(SUFFIXES) and not name.startswith(".")]
    return sorted(files)


def parse_documents(text: str, label: str, suffix: str = "") -> list:
    """Every document of one file's text, or :class:`InputError` naming the file and position.
    JSON by suffix; without a known suffix (standard input, a pipe) JSON when it looks like it."""
    if suffix == ".json" or (suffix not in (".yaml", ".yml") and text.lstrip().startswith(("{", "["))):
        try:
            return [json_value(text)]
        except TooDeep as exc:
            raise InputError(f"{label}: {exc}") from None
        except json.JSONDecodeError as exc:
            if suffix == ".json":
                raise InputError(f"{label}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    try:
        return yaml_documents(text, _Loader)
    except TooDeep as exc:
        raise InputError(f"{label}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{label}: invalid YAML{where}: {reason}") from None


def read_documents(path: Path | str, *, explicit: bool = True, allow_stdin: bool = False, flag: str = "") -> list:
    """Every document of one user file (through :mod:`kubectl_dra.files`: bounded, no FIFO or
    device unless named), or :class:`InputError` naming the file (after ``flag``, when given) and
    the reason or position."""
    label = f"{flag} {describe(path)}".lstrip()
    text = read_text(path, label=label, explicit=explicit, allow_stdin=allow_stdin)
    return parse_documents(text, label, Path(path).suffix.lower() if not is_stdin(path) else "")


_KIND_WORD = re.compile(r"""["']?kind["']?\s*:\s*["']?([A-Za-z][A-Za-z0-9]*)""")


@dataclass(frozen=True)
class Unread:
    """Something in a snapshot that may hold objects but could not be read: a whole file (kinds
    guessed from its text or name; None = any kind) or one object that was skipped."""

    file: str
    kinds: frozenset[str] | None
    name: str | None = None
    whole: bool = True  # a whole file (else one object of it)

    def may_hold(self, kind: str, name: str | None) -> bool:
        return (self.kinds is None or kind in self.kinds) and (self.name is None or name is None or self.name == name)


def file_name(model) -> str:
    """The file ``kubectl dra snapshot`` writes a kind's objects to."""
    return f"{model.PLURAL}.{model.GROUP}.yaml" if model.GROUP else f"{model.PLURAL}.yaml"


def _unread_kinds(file: Path, text: str | None, written: bool) -> frozenset[str] | None:
    """Which kinds an unreadable file may have held: those its text names, the kind a written
    snapshot keeps under its name, else any (None)."""
    if text is not None:
        kinds = {k.removesuffix("List") or "List" for k in _KIND_WORD.findall(text)} - {"List"}
        if kinds:
            return frozenset(kinds)
    if written:
        return next((frozenset({m.KIND}) for m in models() if file.name == file_name(m)), None)
    stem = file.name.split(".")[0].lower()  # a hand-made nodes.yaml, pods.json, resourceclaims.yaml
    return next((frozenset({m.KIND}) for m in models() if stem == m.PLURAL), None)


def _unread_problem(inventory: Inventory, message: str, kinds: frozenset[str] | None) -> None:
    """A file that could not be read, named for the kind it held when that is known (so that a
    command does not call an object of that kind "not found")."""
    inventory.problem(message, kind=next(iter(kinds)) if kinds and len(kinds) == 1 else None)


def load_snapshot(path: Path) -> Inventory:
    """Everything in a snapshot, with problems recorded instead of raised (except a single file
    that cannot be read at all: then there is nothing to show)."""
    return _load_snapshot(Path(path) if not is_stdin(path) else path)[0]


def _load_snapshot(path, written: bool = False) -> tuple[Inventory, list[Unread]]:
    """The snapshot's objects, and what in it could not be read (see :class:`Unread`).

    A single file (or standard input, or a pipe) that yields no object at all is an error naming
    it: exit 3, since there is nothing to show. In a directory each such file is a problem."""
    inventory = Inventory()
    unread: list[Unread] = []
    listing: list[str] = []
    origin: dict[tuple, str] = {}  # (kind, namespace, name) -> the file it was read from
    files = snapshot_files(path, listing)
    for message in listing:
        inventory.problem(message)
        unread.append(Unread(message, None))
    single = len(files) == 1 and files[0] == path
    for file in files:
        label = describe(file)
        try:
            text = read_text(file, label=label, explicit=single, allow_stdin=single)
        except FileReadError as exc:
            if single:
                raise
            if "not a file" in exc.reason:  # a FIFO or device in a directory holds no saved objects
                inventory.problem(str(exc))
                continue
            kinds = _unread_kinds(file, None, written)
            _unread_problem(inventory, str(exc), kinds)
            unread.append(Unread(label, kinds))
            continue
        try:
            documents = parse_documents(text, label, file.suffix.lower() if not is_stdin(file) else "")
        except InputError as exc:
            if single:
                raise
            kinds = _unread_kinds(file, text, written)
            _unread_problem(inventory, str(exc), kinds)
            unread.append(Unread(label, kinds))
            continue
        kept, first_problem = 0, None
        for doc in documents:
            if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and doc["kind"].endswith("List") \
                    and isinstance(doc.get("items"), list):
                kept += 1  # an empty list is a valid answer: "none"
            guess = _unread_kinds(file, None, written) if not is_stdin(file) else None
            for raw in _flatten(doc, label, inventory, unread, guess):
                try:
                    obj = parse_object(raw)
                except InputError as exc:
                    message = f"{label}: {exc}"
                    first_problem = first_problem or message
                    inventory.problem(message)
                    if isinstance(raw, dict) and isinstance(raw.get("kind"), str):
                        meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
                        unread.append(Unread(label, frozenset({raw["kind"]}),
                                             meta.get("name") if isinstance(meta.get("name"), str) else None,
                                             whole=False))
                    continue
                kept += 1
                if obj is not None and not isinstance(obj, dict):
                    key = (type(obj), obj.namespace, obj.name)
                    if key in origin and not _keep_second(inventory, inventory.get(*key), obj, origin[key], label):
                        continue
                    origin[key] = label
                if obj is not None:
                    inventory.add(obj)
                    if isinstance(obj, dict) or obj.KIND == "NodeEnforcementReport":  # checked later, by the
                        inventory.document_files[id(obj)] = label  # command: its problems name the file too
                    if not isinstance(obj, dict) and obj.invalid_fields:
                        for problem in invalid_field_problems(obj):
                            inventory.problem(f"{label}: {problem}", kind=obj.KIND)
        if not single and not documents:  # an empty file where objects were saved: most likely a failed dump
            kinds = _unread_kinds(file, None, written)
            _unread_problem(inventory, f"{label}: empty: it holds no objects"
                            + (f" (its name says {next(iter(kinds))} objects: that kind counts as not read)"
                               if kinds else ""), kinds)
            if kinds:
                unread.append(Unread(label, kinds))
            continue
        if single and not kept:
            if first_problem is None:
                first_problem = next((p.message for p in inventory.problems), f"{label}: no objects in it")
            raise InputError(first_problem)
    return inventory, unread


def _resource_version(obj: KubeObject) -> int | None:
    value = obj.metadata.resource_version
    return int(value) if isinstance(value, str) and value.isdecimal() else None


def _keep_second(inventory: Inventory, first: KubeObject, second: KubeObject, first_file: str,
                 second_file: str) -> bool:
    """The same kind, namespace and name twice in one snapshot. The very same object (uid and
    resourceVersion) is one object, silently. Otherwise which one a verdict rests on must not depend
    on file names: the later resourceVersion wins when both have one (the API server's counter),
    else the first read; both files are named, with the choice and why (exit 4)."""
    if first.uid == second.uid and first.metadata.resource_version == second.metadata.resource_version:
        return False
    a, b = _resource_version(first), _resource_version(second)
    second_wins = a is not None and b is not None and b > a
    why = ("its resourceVersion is the later" if a is not None and b is not None and a != b else
           "the first read, as files are read in name order, since their resourceVersions do not say which "
           "is newer")
    used, other = (second_file, first_file) if second_wins else (first_file, second_file)
    place = f"{first.namespace}/{first.name}" if first.namespace else first.name
    uids = f"uids {first.uid or '<none>'} and {second.uid or '<none>'}" if first.uid != second.uid else \
        f"uid {first.uid}, resourceVersions {first.metadata.resource_version} and {second.metadata.resource_version}"
    inventory.problem(f"{first.KIND} {place} is in {first_file} and in {second_file} ({uids}): using the one in "
                      f"{used} ({why}); the one in {other} is ignored", kind=first.KIND)
    return second_wins


def _flatten(doc, label: str, inventory: Inventory, unread: list[Unread] | None = None,
             guess: frozenset[str] | None = None) -> Iterator:
    """The objects of a document: itself, or the items of a ``kind: List`` (``PodList``, ...). A
    list whose items are not a list is not read: its kind (``NodeList``: Node; a plain ``List``: the
    kind the file's name says, ``guess``) goes into ``unread``, so a lookup cannot say "not found"."""
    if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and doc["kind"].endswith("List") \
            and "items" in doc:
        items = doc["items"]
        if items is None:
            return
        if not isinstance(items, list):
            kinds = frozenset({doc["kind"].removesuffix("List")}) if doc["kind"] != "List" else guess
            inventory.problem(f"{label}: {doc['kind']}: items must be a list of objects, found "
                              f"{type(items).__name__} (its content is not read)",
                              kind=next(iter(kinds)) if kinds and len(kinds) == 1 else None)
            if unread is not None:
                unread.append(Unread(label, kinds))
            return
        for item in items:
            yield from _flatten(item, label, inventory, unread, guess)
    else:
        yield doc


def snapshot_about(path: Path) -> tuple[dict | None, str | None]:
    """The marker of a directory ``kubectl dra snapshot`` wrote (None for hand-made snapshots),
    and what is wrong with a marker that is there but cannot be used."""
    if is_stdin(path):
        return None, None
    marker = Path(path) / MARKER
    if not os.path.isdir(path) or not os.path.lexists(marker):
        return None, None
    try:
        about = yaml_document(read_text(marker, explicit=False), _Loader)
    except InputError as exc:
        why = str(exc)
    except TooDeep as exc:
        why = f"{marker}: {exc}"
    except yaml.YAMLError as exc:
        why = f"{marker}: invalid YAML: {getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"
    else:
        if isinstance(about, dict) and isinstance(about.get("kinds"), dict) \
                and isinstance(about.get("notRead") or {}, dict):
            return about, None
        why = f"{marker}: not a snapshot marker (it needs a kinds: mapping)"
    return None, (f"{why}: which kinds the snapshot holds is unknown, so a kind missing from it may "
                  "not have been read when it was taken")


class SnapshotSource:
    """Objects from snapshot files, filtered per request the way a server would filter them.

    A directory written by ``kubectl dra snapshot`` says which kinds it holds: a kind it could
    not read then is reported as unread now, never as "none"."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path) if not is_stdin(path) else os.fspath(path)
        self._loaded: Inventory | None = None
        self._unread: list[Unread] = []
        self._problems_reported = False
        self._said: set[str] = set()
        self.about, self._marker_problem = snapshot_about(self.path)

    @property
    def description(self) -> str:
        return f"snapshot {describe(self.path)}"

    def _load(self, inventory: Inventory) -> Inventory:
        if self._loaded is None:
            with gc_paused():
                self._loaded, self._unread = _load_snapshot(self.path, written=self.about is not None)
            if self._marker_problem:
                self._loaded.problems.insert(0, Problem(message=self._marker_problem))
            self._check_counts(self._loaded)
        if not self._problems_reported:  # a command may read in two rounds; say each problem once
            inventory.problems.extend(self._loaded.problems)
            self._problems_reported = True
        inventory.documents.update(self._loaded.documents)
        inventory.document_files.update(self._loaded.document_files)
        return self._loaded

    def _check_counts(self, loaded: Inventory) -> None:
        """A kind the marker counts more of than the files hold (a file removed or emptied after the
        snapshot was taken) is not read: never "none" or "not found" for what was lost."""
        counted = (self.about or {}).get("kinds") or {}
        for model in models():
            expected = counted.get(model.KIND)
            if not isinstance(expected, int) or isinstance(expected, bool):
                continue
            skipped = sum(1 for u in self._unread if not u.whole and u.kinds and model.KIND in u.kinds)
            held = len(loaded.all(model))
            if held + skipped < expected and not any(u.whole and u.kinds and model.KIND in u.kinds
                                                     for u in self._unread):
                where = describe(Path(self.path) / file_name(model))
                message = (f"snapshot {self.path}: its marker counts {expected} {model.KIND} objects, the files hold "
                           f"{held}: {where} was changed after the snapshot was taken, so {model.KIND} counts as "
                           "not read")
                loaded.problem(message, kind=model.KIND)
                self._unread.append(Unread(where, frozenset({model.KIND})))

    @staticmethod
    def field_selectable(model, field: str) -> bool:
        """Every field selector is matched here, whatever the release."""
        return True

    def server_version(self) -> tuple[str | None, str]:
        """The API server's version the marker recorded when the snapshot was taken (``serverVersion``),
        or None and why: a hand-made snapshot, or one taken before kubectl-dra recorded it."""
        version = (self.about or {}).get("serverVersion")
        if isinstance(version, str) and version:
            return version, f"snapshot {describe(self.path)}: serverVersion in its marker"
        why = "it has no marker (a hand-made snapshot)" if self.about is None else "its marker does not record it"
        return None, f"snapshot {describe(self.path)}: {why}"

    def prime(self, requests: Iterable[ReadRequest]) -> list:
        """Nothing to ask for ahead: the files are read once, whole."""
        return []

    def read(self, requests: Iterable[ReadRequest], into: Inventory | None = None) -> Inventory:
        inventory = into if into is not None else Inventory()
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
        found = False
        for obj in loaded.all(model):
            if model.NAMESPACED and request.namespace and obj.namespace != request.namespace:
                continue
            if labels(obj.metadata.labels) and fields(obj.raw) and (request.keep is None or request.keep(obj)):
                found = True
                yield obj
        if any(u.whole and u.kinds is not None and model.KIND in u.kinds for u in self._unread):
            # a file known to hold this kind was not read: the kind is not read (what is shown is
            # partial, and nothing is concluded from an object's absence), as after a failed list
            return
        name = _selected_name(request.field_selector)
        doubt = [u.file for u in self._unread if u.may_hold(model.KIND, name)]
        if name is not None and not found and doubt:
            # "not found" only when it was read and is absent: here it may be in what could not be read
            inventory.problem(f'cannot tell whether {model.KIND} "{name}" exists in {self.description}: '
                              f"{', '.join(sorted(set(doubt)))} could not be read (see above)", kind=model.KIND,
                              severity="error" if request.required else "warning")
            return
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


def _selected_name(field_selector: str | None) -> str | None:
    """X of a ``metadata.name=X`` field selector (a lookup by name), else None."""
    for requirement in parse_field_selector(field_selector):
        if requirement.key == "metadata.name" and requirement.operator == "=":
            return requirement.values[0]
    return None


MARKER = ".kubectl-dra-snapshot.yaml"
"""Written last into every snapshot directory: which kinds it holds (a kind missing here was not
read, which is not the same as "none exist"), from where, and which namespace."""
