"""The one environment a command runs in: streams, tty, colour, clock, program name.

Injected into every command (as httpie does) so tests can swap streams and the clock, and so a
command never reaches for ``sys.stdout`` or ``datetime.now`` itself.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, TextIO

from kubectl_dra.text import to_terminal


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Environment:
    """``stdout``/``stderr`` left as None mean "sys.stdout/sys.stderr at the time of writing",
    which is what click's test runner swaps."""

    out: TextIO | None = None
    err: TextIO | None = None
    stdout_isatty: bool | None = None
    color: str = "auto"  # auto | always | never
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    now: Callable[[], datetime] = _now
    program: str = "kubectl dra"

    @property
    def stdout(self) -> TextIO:
        return self.out or sys.stdout

    @property
    def stderr(self) -> TextIO:
        return self.err or sys.stderr

    @property
    def isatty(self) -> bool:
        if self.stdout_isatty is not None:
            return self.stdout_isatty
        check = getattr(self.stdout, "isatty", None)
        return bool(check and check())

    @property
    def use_color(self) -> bool:
        """``always``/``never`` as told; ``auto`` = a terminal, unless NO_COLOR is set to a non-empty
        value (no-color.org: an empty one does not count) or TERM=dumb."""
        if self.color == "always":
            return True
        if self.color == "never":
            return False
        return self.isatty and not self.environ.get("NO_COLOR") and self.environ.get("TERM") != "dumb"

    def write(self, text: str, *, encoded: bool = False) -> None:
        """Data for stdout. Every write passes here, so this is where control characters from
        objects and files are escaped (kubectl_dra.text.terminal_safe). ``encoded``: a JSON or YAML
        document from kubectl_dra.printers.documents, which escapes every control character itself
        (they would pass unchanged anyway; this skips scanning a large document twice)."""
        self.stdout.write(text if encoded else to_terminal(text))

    def error(self, text: str) -> None:
        """One message for stderr, escaped as :meth:`write` does."""
        self.stderr.write(to_terminal(text.rstrip("\n")) + "\n")


def program_name(argv0: str) -> str:
    """``kubectl dra`` when run as a kubectl plugin (or its executable), as krew recommends."""
    base = os.path.basename(argv0)
    return "kubectl dra" if base.startswith("kubectl-") or base == "kubectl" else base
