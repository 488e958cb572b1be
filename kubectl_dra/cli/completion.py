"""``kubectl_complete-dra``: shell completion for ``kubectl dra``, the way kubectl asks for it.

kubectl (>= 1.26) completes a plugin's arguments by running
``kubectl_complete-<plugin> __complete <args...> <partial word>`` and reading cobra's protocol:
one candidate per line (``value<TAB>description``), then ``:<directive>`` (4 = no file fallback).
"""

from __future__ import annotations

import sys

NO_FILE_COMPLETION = 4


def complete(args: list[str]) -> list[str]:
    from click.shell_completion import ShellComplete

    from kubectl_dra.cli import cli

    if args and args[0] in ("__complete", "__completeNoDesc"):
        args = args[1:]
    words, incomplete = (args[:-1], args[-1]) if args else ([], "")
    completer = ShellComplete(cli, {}, "kubectl dra", "_KUBECTL_DRA_COMPLETE")
    lines = []
    for item in completer.get_completions(words, incomplete):
        lines.append(f"{item.value}\t{item.help}" if item.help else item.value)
    return lines + [f":{NO_FILE_COMPLETION}"]


def main() -> None:
    sys.stdout.write("\n".join(complete(sys.argv[1:])) + "\n")
