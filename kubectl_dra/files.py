"""The one reader of the files a user hands to kubectl-dra: snapshot files and their marker,
``--catalog``, ``taints -f``, kubeconfig files and their ``tokenFile``.

A path can name anything, and a plain ``open().read()`` hangs on a FIFO and reads ``/dev/zero``
until memory runs out. So every read here checks what the path is before reading it, and reads at
most :data:`MAX_BYTES` (``KUBECTL_DRA_MAX_FILE_BYTES`` raises it):

- a path the user named (``explicit``) may be a regular file, ``-`` (standard input, kubectl's
  convention, where the caller allows it) or a pipe (``<(…)``, a FIFO: read, bounded, until the
  writer closes it);
- a file found inside a directory must be a regular file: a FIFO, socket or device there is
  refused without being opened (opening a FIFO waits for a writer, opening a device may act).

Every failure is a :class:`FileReadError` whose message says why in words a user can act on.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from kubectl_dra.errors import InputError

MAX_BYTES = 256 * 1024 * 1024
"""The most one file, pipe or standard input may hold (256 MiB, about a million pods' worth of
claims, or ten thousand pods); ``KUBECTL_DRA_MAX_FILE_BYTES`` sets another limit."""

LIMIT_ENV = "KUBECTL_DRA_MAX_FILE_BYTES"
STDIN = "-"


class FileReadError(InputError):
    """A user's file that cannot be read; ``missing`` when nothing is at the path."""

    def __init__(self, label: str, reason: str, *, missing: bool = False):
        super().__init__(f"{label}: {reason}")
        self.label, self.reason, self.missing = label, reason, missing


def limit() -> int:
    """:data:`MAX_BYTES`, or the number of bytes ``KUBECTL_DRA_MAX_FILE_BYTES`` says."""
    value = os.environ.get(LIMIT_ENV, "").strip()
    if not value:
        return MAX_BYTES
    try:
        number = int(value)
    except ValueError:
        raise InputError(f"{LIMIT_ENV}={value!r}: not a number of bytes") from None
    if number <= 0:
        raise InputError(f"{LIMIT_ENV}={value!r}: must be a positive number of bytes")
    return number


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n} bytes"


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    if stat.S_ISCHR(mode):
        return "is a character device"
    if stat.S_ISBLK(mode):
        return "is a block device"
    return "is not a regular file"


def _os_reason(exc: OSError, path: str) -> tuple[str, bool]:
    """(why, missing) for an OSError on ``path``."""
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop)", False
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)}, which does not exist", True
        return "no such file or directory", True
    if exc.errno == errno.ENOTDIR:
        return "a part of the path is not a directory", True
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied", False
    if exc.errno == errno.EISDIR:
        return "is a directory", False
    if exc.errno == errno.ENXIO:
        return "is a socket or a device with nothing behind it", False
    return f"cannot read: {exc.strerror or exc}", False


def read_bytes(path: str | os.PathLike, *, label: str | None = None, explicit: bool = True,
               allow_stdin: bool = False) -> bytes:
    """The whole content of ``path`` (at most :func:`limit` bytes), or :class:`FileReadError`.

    ``explicit``: the user named this path (a pipe is then read too); False for a file found in a
    directory (only a regular file). ``allow_stdin``: ``-`` means standard input."""
    text = os.fspath(path)
    label = label or text
    most = limit()
    if allow_stdin and text == STDIN:
        return _read_stdin(label, most)
    info = _stat(text, label)
    what = _kind(info.st_mode)
    pipe = stat.S_ISFIFO(info.st_mode)
    if what is not None and not (pipe and explicit):
        where = "" if explicit else " (only regular files are read from a directory)"
        raise FileReadError(label, f"{what}, not a file{where}")
    if not pipe:
        _check_size(info, label, most)
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    if not pipe:  # never wait in open(): the file may have been replaced by a FIFO since stat
        flags |= os.O_NONBLOCK
    try:
        fd = os.open(text, flags)
    except OSError as exc:
        reason, missing = _os_reason(exc, text)
        raise FileReadError(label, reason, missing=missing) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) != pipe or (not pipe and _kind(mode) is not None):
            raise FileReadError(label, f"{_kind(mode) or 'changed'} while being opened")
        if not pipe:
            os.set_blocking(fd, True)
        return _bounded(lambda n: os.read(fd, n), label, most)
    except OSError as exc:
        raise FileReadError(label, _os_reason(exc, text)[0]) from None
    finally:
        os.close(fd)


def _stat(text: str, label: str) -> os.stat_result:
    """``os.stat`` (following links), its failure said as :class:`FileReadError`."""
    try:
        return os.stat(text)
    except OSError as exc:
        reason, missing = _os_reason(exc, text)
        raise FileReadError(label, reason, missing=missing) from None


def _check_size(info: os.stat_result, label: str, most: int) -> None:
    """A file whose size says it is over the limit is refused before it is opened."""
    if info.st_size > most:
        raise FileReadError(label, f"is {info.st_size} bytes, more than the limit of {_size(most)} "
                                   f"(set {LIMIT_ENV} to read it)")


def check_file(path: str | os.PathLike, *, label: str | None = None) -> None:
    """For a file another library opens itself (a TLS certificate or key): refuse, without opening
    it, what :func:`read_bytes` would refuse; a pipe is left for that library to read, once."""
    text = os.fspath(path)
    label = label or text
    info = _stat(text, label)
    what = _kind(info.st_mode)
    if what is not None and not stat.S_ISFIFO(info.st_mode):
        raise FileReadError(label, f"{what}, not a file")
    if what is None:
        _check_size(info, label, limit())


def read_text(path: str | os.PathLike, **kwargs) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a BOM is dropped), or :class:`FileReadError`."""
    data = read_bytes(path, **kwargs)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        label = kwargs.get("label") or os.fspath(path)
        raise FileReadError(label, f"not UTF-8 text (byte {exc.start})") from None


def _read_stdin(label: str, most: int) -> bytes:
    stream = sys.stdin
    if stream is None:
        raise FileReadError(label, "there is no standard input")
    if stream.isatty():
        raise FileReadError(label, "standard input is a terminal: pipe the objects in, e.g. "
                                   "kubectl get pods -A -o yaml | kubectl dra claims -A --snapshot -")
    binary = getattr(stream, "buffer", None)
    reader = binary.read if binary is not None else (lambda n: stream.read(n).encode("utf-8"))
    try:
        return _bounded(reader, label, most)
    except OSError as exc:
        raise FileReadError(label, f"cannot read: {exc.strerror or exc}") from None


def _bounded(read, label: str, most: int) -> bytes:
    """Read until the end, refusing more than ``most`` bytes (a pipe says its size only by ending)."""
    chunks, total = [], 0
    while True:
        chunk = read(min(1024 * 1024, most + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > most:
            raise FileReadError(label, f"more than the limit of {_size(most)} (set {LIMIT_ENV} to read more)")


def describe(path: str | os.PathLike) -> str:
    """How to name a path in a message: ``-`` is standard input."""
    return "standard input" if os.fspath(path) == STDIN else os.fspath(path)


def is_stdin(path: str | os.PathLike | None) -> bool:
    return path is not None and os.fspath(path) == STDIN


__all__ = ["FileReadError", "MAX_BYTES", "LIMIT_ENV", "STDIN", "read_bytes", "read_text", "check_file", "limit", "describe",
           "is_stdin"]
