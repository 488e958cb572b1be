"""Dispatch a result to the chosen output format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pydantic import BaseModel

from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.env import Environment
from kubectl_dra.printers.documents import to_json, to_yaml
from kubectl_dra.printers.versions import version_lines


@dataclass(frozen=True)
class Printed:
    """A text view in parts: ``data`` (the tables) for stdout, a ``heading`` above it and ``prose``
    (findings in words) below it; with --no-headers, whose output is for pipes, heading and prose go
    to stderr instead."""

    data: str
    prose: str = ""
    heading: str = ""


def emit(env: Environment, result: BaseModel, output: OutputOptions, *,
         text: Callable[[], str | Printed], names: Callable[[], list[str]] | None = None) -> None:
    """json/yaml serialize the result document; name prints ``kind/name`` lines; else ``text()``."""
    if output.format == "json":
        env.write(to_json(result), encoded=True)
    elif output.format == "yaml":
        env.write(to_yaml(result), encoded=True)
    elif output.format == "name" and names is not None:
        env.write("".join(n + "\n" for n in names()))
    else:
        printed = text()
        for line in version_lines(getattr(result, "versions", None)):  # once, before the view
            env.error(line)
        if not isinstance(printed, Printed):
            env.write(printed)
            return
        say = env.error if output.no_headers else env.write
        if printed.heading:
            say(printed.heading)
        env.write(printed.data)
        if printed.prose:
            say(printed.prose)
