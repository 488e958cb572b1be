"""A click group whose subcommands are imported only when used, so ``--help`` starts fast."""

from __future__ import annotations

import importlib

import click


class LazyGroup(click.Group):
    def __init__(self, *args, lazy_commands: dict[str, tuple[str, str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands or {}  # name -> (module path, short help)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_commands:
            module_name, attr = self.lazy_commands[name][0].split(":")
            return getattr(importlib.import_module(module_name), attr)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List subcommands from the table, without importing them."""
        rows = [(name, self.lazy_commands[name][1]) for name in sorted(self.lazy_commands)]
        rows += [(name, cmd.get_short_help_str()) for name, cmd in sorted(self.commands.items())]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))
