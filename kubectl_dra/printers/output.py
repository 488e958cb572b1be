"""Dispatch a result to the chosen output format."""

from __future__ import annotations

from typing import Callable

from pydantic import BaseModel

from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.env import Environment
from kubectl_dra.printers.documents import to_json, to_yaml


def emit(env: Environment, result: BaseModel, output: OutputOptions, *,
         text: Callable[[], str], names: Callable[[], list[str]] | None = None) -> None:
    """json/yaml serialize the result document; name prints ``kind/name`` lines; else ``text()``."""
    if output.format == "json":
        env.write(to_json(result))
    elif output.format == "yaml":
        env.write(to_yaml(result))
    elif output.format == "name" and names is not None:
        env.write("".join(n + "\n" for n in names()))
    else:
        env.write(text())
