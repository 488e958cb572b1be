"""Writing ``kubectl dra snapshot -o DIR`` the way careful tools write, so that nothing of the
user's is ever lost:

- DIR must be new, empty, or exactly an earlier snapshot of ours: its marker and the files the
  marker lists, nothing else. Only such a directory is replaced, and only with ``--overwrite``;
  anything else is refused and kept, named.
- A lock beside DIR (``.DIR.lock``, ``flock``) keeps a second writer out for the whole run, so two
  runs at once never leave one of them silently lost.
- The snapshot is written into a new directory beside DIR and renamed into place. DIR is checked
  again right before: a file that appeared while the cluster was read (which can take minutes) is
  kept, and the run fails saying so.
- An earlier snapshot is moved aside and exactly the files it listed are removed; a directory that
  is not empty after that is left where it is, and said.
- A DIR that is a symlink is followed: the directory it names is replaced, the link stays.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kubectl_dra.errors import InputError
from kubectl_dra.kube.snapshot import MARKER, file_name, snapshot_about
from kubectl_dra.model.base import KubeObject
from kubectl_dra.model.registry import models

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def document_file(kind: str) -> str:
    """The file of our own documents of one kind (an InstanceTypeCatalog)."""
    return f"{kind.lower()}s.kubectl-dra.io.yaml"


def _os_reason(exc: OSError) -> str:
    return {errno.ENOTDIR: "a part of the path is not a directory", errno.EEXIST: "a part of the path is not a directory",
            errno.ELOOP: "too many levels of symbolic links (a symlink loop)", errno.EACCES: "permission denied",
            errno.EPERM: "operation not permitted", errno.EROFS: "read-only file system",
            errno.ENOSPC: "no space left on device"}.get(exc.errno, (exc.strerror or str(exc)).lower())


def listed_files(marker: dict) -> set[str] | None:
    """The files an earlier snapshot's marker says it wrote (``files``; for markers written before
    that field, derived from its ``kinds`` as the writer names them); None when it cannot say."""
    files = marker.get("files")
    if isinstance(files, list) and all(isinstance(f, str) and f and "/" not in f for f in files):
        return set(files)
    kinds = marker.get("kinds")
    if not isinstance(kinds, dict):
        return None
    by_kind = {m.KIND: file_name(m) for m in models()}
    return {by_kind.get(kind) or document_file(str(kind)) for kind in kinds}


@dataclass
class SnapshotTarget:
    """``-o DIR``: checked and locked on entry, written by :meth:`write`, unlocked on exit."""

    requested: Path
    overwrite: bool
    directory: Path = field(init=False)
    warnings: list[str] = field(default_factory=list)
    _lock: int | None = field(default=None, init=False)
    _lock_path: Path | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.requested = self.directory = Path(self.requested)

    # -- entry: resolve, lock, check -------------------------------------------------------------

    def __enter__(self) -> "SnapshotTarget":
        try:
            # a symlink is followed: the directory it names is the snapshot, and the link stays
            if os.path.islink(self.requested):
                self.directory = Path(os.path.realpath(self.requested))
            self._check_parent()
            self._take_lock()
            self._check(before_read=True)
        except OSError as exc:
            self._release()
            where = exc.filename if exc.filename and os.fspath(exc.filename) != os.fspath(self.directory) else None
            raise InputError(f"cannot write snapshot to {self.requested}: {_os_reason(exc)}"
                             + (f" ({where})" if where else "")) from None
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._release()

    def _check_parent(self) -> None:
        """The parent must exist as a directory (created now if missing) and take a new entry:
        known before anything is read, not after every kind was."""
        parent = self.directory.absolute().parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise InputError(f"cannot write snapshot to {self.requested}: {parent} is not a directory") from None
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, exc.filename) from None
        if not parent.is_dir():
            raise InputError(f"cannot write snapshot to {self.requested}: {parent} is not a directory")
        probe = parent / f".{self.directory.name}.probe-{os.getpid()}"
        try:
            os.mkdir(probe)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(parent)) from None
        os.rmdir(probe)

    def _take_lock(self) -> None:
        path = self.directory.absolute().parent / f".{self.directory.name}.lock"
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise InputError(f"cannot write snapshot to {self.requested}: another `kubectl dra snapshot` "
                                     f"is writing it now (it holds {path}); wait for it, or choose another "
                                     "directory") from None
                raise
            try:  # the holder before us may have removed the file: then lock the new one
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                self._lock, self._lock_path = fd, path
                return
            os.close(fd)

    def _release(self) -> None:
        if self._lock is not None:
            try:
                os.unlink(self._lock_path)  # ours: created by _take_lock, removed while still held
            except OSError:
                pass
            os.close(self._lock)
            self._lock = None

    def _check(self, *, before_read: bool) -> None:
        """DIR new, empty, or (with --overwrite) exactly an earlier snapshot; else InputError."""
        when = "" if before_read else " (it changed while the cluster was read; the new snapshot was not written)"
        try:
            info = os.stat(self.directory)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            raise InputError(f"cannot write snapshot to {self.requested}: it exists and is not a directory{when}")
        entries = set(os.listdir(self.directory))
        if not entries:
            return
        if not self.overwrite:
            raise InputError(f"{self.requested} is not empty: pass --overwrite to replace the snapshot in it, "
                             f"or choose a new directory{when}")
        theirs = self._not_ours(entries)
        if theirs:
            raise InputError(f"{self.requested} holds {theirs}: not replacing it, even with --overwrite "
                             f"(only a directory that is exactly an earlier snapshot is replaced); move them, or "
                             f"choose a new directory{when}")

    def _not_ours(self, entries: set[str]) -> str | None:
        """What in DIR is not part of an earlier snapshot of ours, in words; None if nothing."""
        if MARKER not in entries:
            return f"no snapshot ({MARKER} is missing)"
        marker, _ = snapshot_about(self.directory)  # the reader's own check: bounded, no FIFO, depth-bounded
        listed = listed_files(marker) if marker is not None else None
        if listed is None:
            return f"a {MARKER} that does not say which files it wrote"
        extra = sorted(e for e in entries - listed - {MARKER})
        odd = sorted(e for e in entries & (listed | {MARKER})
                     if not stat.S_ISREG(os.lstat(self.directory / e).st_mode))
        if extra or odd:
            names = [f"{e}/" if (self.directory / e).is_dir() else e for e in extra + odd]
            return "files that are not part of its snapshot: " + ", ".join(names[:5]) + (
                f" and {len(names) - 5} more" if len(names) > 5 else "")
        return None

    # -- writing ----------------------------------------------------------------------------------

    def write(self, objects_by_kind: dict[type[KubeObject], list[dict]], about: dict | None = None,
              documents: dict[str, list[dict]] | None = None) -> list[Path]:
        """One ``kind: List`` file per kind (``<plural>.<group>.yaml``), our own documents, and the
        marker listing them, staged beside DIR and renamed into place; the files, under the path
        the user gave."""
        parent = self.directory.absolute().parent
        staging = parent / f".{self.directory.name}.new-{os.getpid()}"
        if os.path.lexists(staging):  # a run of ours with this pid died here; only our own names
            raise InputError(f"cannot write snapshot to {self.requested}: {staging} is in the way "
                             "(left by an interrupted run): remove it")
        staging.mkdir()  # the umask applies, as for mkdir
        names: list[str] = []
        try:
            try:
                for model, items in objects_by_kind.items():
                    document = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
                    self._dump(staging / file_name(model), yaml.dump(document, Dumper=_Dumper, sort_keys=False,
                                                                     default_flow_style=False))
                    names.append(file_name(model))
                for kind, items in (documents or {}).items():  # our own documents, as read
                    self._dump(staging / document_file(kind), yaml.dump_all(items, Dumper=_Dumper, sort_keys=False,
                                                                           default_flow_style=False))
                    names.append(document_file(kind))
                marker = {**(about or {}),
                          "kinds": {**{m.KIND: len(items) for m, items in objects_by_kind.items()},
                                    **{kind: len(items) for kind, items in (documents or {}).items()}},
                          "files": names}
                self._dump(staging / MARKER, "# written by kubectl dra snapshot; read back with --snapshot DIR\n"
                           + yaml.dump(marker, Dumper=_Dumper, sort_keys=False))
            except OSError as exc:
                raise InputError(f"cannot write snapshot to {self.requested}: {_os_reason(exc)}") from None
            self._check(before_read=False)
            try:
                self._replace(staging)
            except OSError as exc:
                raise InputError(f"cannot write snapshot to {self.requested}: {_os_reason(exc)}") from None
        except BaseException:
            for name in [*names, MARKER]:
                try:
                    os.unlink(staging / name)
                except OSError:
                    pass
            try:
                os.rmdir(staging)
            except OSError:
                pass
            raise
        return [self.requested / name for name in names]

    @staticmethod
    def _dump(path: Path, text: str) -> None:
        with open(path, "x", encoding="utf-8") as f:
            f.write(text)

    def _replace(self, staging: Path) -> None:
        if not os.path.lexists(self.directory):
            os.rename(staging, self.directory)
            return
        if not os.listdir(self.directory):  # empty: rmdir refuses if something appeared since
            os.rmdir(self.directory)
            os.rename(staging, self.directory)
            return
        retired = self.directory.parent / f".{self.directory.name}.old-{os.getpid()}"
        os.rename(self.directory, retired)
        theirs = self._not_ours_in(retired)
        if theirs:  # something arrived between the check and the move: put it all back
            os.rename(retired, self.directory)
            raise InputError(f"{self.requested} holds {theirs} (it changed while the snapshot was written): "
                             "not replacing it")
        os.rename(staging, self.directory)
        for name in os.listdir(retired):  # exactly the earlier snapshot's files (checked just above)
            os.unlink(retired / name)
        try:
            os.rmdir(retired)
        except OSError:
            self.warnings.append(f"the earlier snapshot's directory is left at {retired}: something was added "
                                 "to it while it was being replaced")

    def _not_ours_in(self, directory: Path) -> str | None:
        saved, self.directory = self.directory, directory
        try:
            return self._not_ours(set(os.listdir(directory)))
        finally:
            self.directory = saved
