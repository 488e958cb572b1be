"""The output settings a command was given (``-o``, ``--no-headers``, ``--color``), as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field

OUTPUT_FORMATS = ("table", "wide", "json", "yaml", "name")


@dataclass(frozen=True)
class OutputOptions:
    format: str = "table"
    no_headers: bool = False
    color: str = "auto"
    extra: dict = field(default_factory=dict)

    @property
    def wide(self) -> bool:
        return self.format == "wide"
