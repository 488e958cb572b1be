"""``kubectl_complete-dra``: shell completion for ``kubectl dra``, the way kubectl asks for it.

kubectl (>= 1.26) completes a plugin's arguments by running
``kubectl_complete-<plugin> __complete <args...> <partial word>`` and reading cobra's protocol:
one candidate per line (``value<TAB>description``), then ``:<directive>``. Flags complete with all
their names (the connection flags too, hidden from ``--help``); file flags hand over to the shell's
file completion; object names come from the cluster or snapshot the words typed so far point at,
as kubectl completes ``kubectl get pod <TAB>`` (kubectl_dra/flags/completion.py).
"""

from __future__ import annotations

import os
import sys
import threading

import click
from click.core import ParameterSource
from click.shell_completion import CompletionItem, _resolve_context, _resolve_incomplete

from kubectl_dra.cli import cli
from kubectl_dra.streams import OutputError, guard_streams, output_failed

# cobra's ShellCompDirective values
DEFAULT, NO_FILE_COMPLETION, FILTER_FILE_EXT, FILTER_DIRS = 0, 4, 8, 16
EXTENSIONS = {"catalog": ("yaml", "yml", "json")}  # file flags that take only these


def complete(args: list[str]) -> list[str]:
    if args and args[0] in ("__complete", "__completeNoDesc"):
        args = args[1:]
    words, incomplete = (args[:-1], args[-1]) if args else ([], "")
    try:
        ctx = _resolve_context(cli, {}, "kubectl dra", list(words))
        obj, incomplete = _resolve_incomplete(ctx, list(words), incomplete)
    except (click.ClickException, click.exceptions.Exit):
        return [f":{NO_FILE_COMPLETION}"]
    if isinstance(obj, click.Command) and incomplete.startswith("-"):
        return _lines(_flags(ctx, obj, incomplete)) + [f":{NO_FILE_COMPLETION}"]
    if isinstance(obj, click.Parameter) and isinstance(obj.type, click.Path):
        if obj.name in EXTENSIONS:
            return list(EXTENSIONS[obj.name]) + [f":{FILTER_FILE_EXT}"]
        return [f":{FILTER_DIRS if not obj.type.file_okay else DEFAULT}"]
    return _lines(obj.shell_complete(ctx, incomplete)) + [f":{NO_FILE_COMPLETION}"]


def _lines(items) -> list[str]:
    return [f"{item.value}\t{item.help}" if item.help else item.value for item in items]


def _flags(ctx: click.Context, command: click.Command, incomplete: str):
    """Every flag of the command, hidden ones included, but not one already given (unless repeatable)."""
    items = []
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option):
            continue
        if not param.multiple and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE:
            continue
        items += [CompletionItem(name, help=(param.help or "").split(". ")[0])
                  for name in (*param.opts, *param.secondary_opts) if name.startswith(incomplete)]
    return items


DEADLINE = 4.5
"""Seconds the whole answer may take (the README promises a TAB answers within 5 s, whatever the
flags point at: an unreachable server, a FIFO named as --snapshot, a huge file)."""


def bounded(args: list[str], deadline: float = DEADLINE) -> list[str]:
    """:func:`complete`, or no candidates when it cannot answer within ``deadline`` seconds (the
    work goes on in a daemon thread that the process leaves behind when it exits)."""
    answer: list[list[str]] = []

    def work() -> None:
        try:
            answer.append(complete(args))
        except Exception:  # never a traceback into the user's shell
            answer.append([f":{NO_FILE_COMPLETION}"])

    worker = threading.Thread(target=work, name="complete", daemon=True)
    worker.start()
    worker.join(deadline)
    return answer[0] if answer else [f":{NO_FILE_COMPLETION}"]


def main() -> None:
    # os._exit: a read still blocked in the worker (a FIFO with no writer) must not hold the exit
    guard_streams()
    try:
        sys.stdout.write("\n".join(bounded(sys.argv[1:])) + "\n")
        sys.stdout.flush()
    except OutputError as exc:
        os._exit(output_failed(exc))
    os._exit(0)
