"""``-o``, ``--no-headers`` and ``--color``, for the commands of both programs that print a result."""

from __future__ import annotations

import functools

import click

from kubectl_dra.printers.options import OUTPUT_FORMATS, OutputOptions


def output_options(formats: tuple[str, ...] = OUTPUT_FORMATS, default: str = "table"):
    """``-o``, ``--no-headers`` and ``--color``; the command receives ``output=OutputOptions``."""

    def decorate(command):
        @functools.wraps(command)
        def wrapper(*args, output_format, no_headers, color, **kwargs):
            return command(*args, output=OutputOptions(output_format, no_headers, color), **kwargs)

        wrapper = click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
                               show_default=True, help="Colour the output (auto: only on a terminal).")(wrapper)
        wrapper = click.option("--no-headers", is_flag=True, help="Print tables without the header line.")(wrapper)
        wrapper = click.option("-o", "--output", "output_format", type=click.Choice(formats), default=default,
                               show_default=True, help="Output format.")(wrapper)
        return wrapper

    return decorate
