"""``kubectl dra version``."""

from __future__ import annotations

import click

from kubectl_dra import __version__
from kubectl_dra.flags.connection import connection_help


@click.command("version")
@click.pass_obj
def version(env) -> None:
    """Print the kubectl-dra version."""
    env.write(f"kubectl-dra {__version__}\n")


@click.command("options")
@click.pass_obj
def options(env) -> None:
    """List the connection flags every command accepts (before or after the command name)."""
    formatter = click.HelpFormatter(max_width=100)
    formatter.write_text("These flags work like kubectl's and may be given before or after the command:")
    with formatter.section("Connection flags"):
        formatter.write_dl(connection_help())
    env.write(formatter.getvalue())
