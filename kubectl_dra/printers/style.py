"""ANSI colour, used only when the environment says so. The codes are marked, not written: the
output boundary makes them real after escaping what the data holds (kubectl_dra.text)."""

from __future__ import annotations

from kubectl_dra.text import colored

_CODES = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "cyan": "36",
          "bold": "1", "dim": "2"}

SEVERITY_COLOR = {"error": "red", "warning": "yellow", "info": "cyan"}


class Style:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles if s in _CODES)
        return colored(codes, text)

    def severity(self, severity: str, text: str | None = None) -> str:
        return self(text if text is not None else severity, SEVERITY_COLOR.get(severity, ""))
