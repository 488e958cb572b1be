"""The standard streams at the edges of a run of either program: a reader that went away, a stream
that is closed or full.

- The reader of a pipe went away (``kubectl dra claims -A | head -1``): the run ends quietly, as
  kubectl does. kubectl dies of SIGPIPE, which a shell reports as 141; so does this (Python
  ignores the signal so that sockets raise errors instead, so the status is set here).
- Standard output cannot take the data (``>/dev/full``, or closed with ``>&-``): one line on
  stderr, exit 3 (nothing shown), never a traceback.
- Standard error is closed or full: messages are lost, never the exit code.

Every write to stdout goes through :class:`_Guarded`, which turns the OSError into
:class:`OutputError`: a command's own error handling can then never mistake a failed write for a
failed read, and the run ends here with the right status.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, NoReturn

import click

READER_GONE = 141
"""Exit status when the reader of standard output went away: 128 + SIGPIPE, what a shell reports
for kubectl in the same place."""
OUTPUT_FAILED = 3


class OutputError(Exception):
    """Standard output did not take what was written (not an OSError: nothing may handle it as a read)."""

    def __init__(self, cause: OSError):
        super().__init__(cause.strerror or str(cause))
        self.errno = cause.errno


class _Guarded:
    """A text stream whose failed writes and flushes raise :class:`OutputError`."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise OutputError(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise OutputError(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Closed:
    """Standard output that was closed before the run (``>&-``): writing data to it fails."""

    encoding, errors = "utf-8", "strict"

    def write(self, text: str) -> int:
        if not text:
            return 0
        raise OutputError(OSError(errno.EBADF, "standard output is closed"))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


class _Mute:
    """Standard error that may be closed or full: what cannot be written is dropped."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _reserve_standard_descriptors() -> set[int]:
    """Open /dev/null on each of 0, 1 and 2 that is closed, so that no file the run opens later
    takes one of their numbers (and its data goes where stdout should); which were closed."""
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
            os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
    return closed


def _discard_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's own flush at exit has nowhere to fail."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


def guard_streams() -> None:
    """Install the guards on sys.stdout and sys.stderr (a closed one replaced)."""
    closed = _reserve_standard_descriptors()
    stdout = sys.stdout
    sys.stdout = _Closed() if stdout is None or 1 in closed else _Guarded(stdout)  # type: ignore[assignment]
    stderr = sys.stderr if sys.stderr is not None and 2 not in closed else open(os.devnull, "w")
    sys.stderr = _Mute(stderr)  # type: ignore[assignment]


def output_failed(exc: OutputError) -> int:
    """The status for a failed write, with its one line on stderr (none when the reader went away)."""
    _discard_stdout()
    if exc.errno == errno.EPIPE:
        return READER_GONE
    sys.stderr.write(f"error: cannot write the output: {exc}\n")
    return OUTPUT_FAILED


def run_click(command: Any, prog_name: str) -> NoReturn:
    """Run a click command as a program, as click's standalone mode does (usage errors said, exit
    codes kept), with the streams guarded and the output flushed before the status is decided."""
    guard_streams()
    try:
        try:
            code = command.main(prog_name=prog_name, standalone_mode=False)
        except click.ClickException as exc:
            exc.show()
            code = exc.exit_code
        except click.Abort:
            sys.stderr.write("Aborted!\n")
            code = 1
        if not isinstance(code, int):
            code = 0
        sys.stdout.flush()
    except OutputError as exc:
        code = output_failed(exc)
    sys.stderr.flush()
    sys.exit(code)
