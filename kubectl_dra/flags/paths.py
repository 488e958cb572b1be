"""Path flags: one rule for all. A path that is missing or of the wrong kind is an input error
(exit 3) said in the project's words by whatever reads it, never click's path check (a usage
error, exit 2, "Invalid value"); a directory flag still completes as directories."""

from __future__ import annotations

import click


class PathInputError(click.ClickException):
    """A path flag checked while the flags are parsed (``--cgroup-root``) that names something
    missing or of the wrong kind: exit 3, as a missing --snapshot is, in one ``error:`` line."""

    exit_code = 3

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class DirectoryPath(click.Path):
    """A flag naming a directory: shell completion lists directories, and the value is passed on
    unchecked for the command to read or refuse in its own words."""

    def __init__(self, path_type: type | None = None):
        super().__init__(file_okay=False, path_type=path_type)

    def convert(self, value, param, ctx):
        return self.coerce_path_result(value)
