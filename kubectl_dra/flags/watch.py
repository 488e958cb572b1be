"""``-w/--watch``, ``--watch-only`` and ``--output-watch-events``: the flags and their usage
checks (what is printed for them: kubectl_dra/commands/watching.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class WatchOptions:
    watch: bool = False
    only: bool = False  # --watch-only: no list printed first
    events: bool = False  # --output-watch-events

    @property
    def on(self) -> bool:
        return self.watch or self.only


def watch_options(what: str):
    """``-w/--watch``, ``--watch-only`` and ``--output-watch-events``; the command receives
    ``watch=WatchOptions``."""

    def decorate(command):
        @functools.wraps(command)
        def wrapper(*args, watch_flag, watch_only, output_watch_events, **kwargs):
            return command(*args, watch=WatchOptions(watch_flag, watch_only, output_watch_events), **kwargs)

        wrapper = click.option("--output-watch-events", is_flag=True,
                               help="With -w: say what each row is, in a first EVENT column (ADDED, MODIFIED, "
                                    "DELETED; {\"type\", \"object\"} with -o json/yaml).")(wrapper)
        wrapper = click.option("--watch-only", is_flag=True,
                               help=f"Watch for changes to {what} without printing the list first.")(wrapper)
        wrapper = click.option("-w", "--watch", "watch_flag", is_flag=True,
                               help=f"After the list, print one row each time {what} change, as kubectl get -w "
                                    "(until Ctrl-C or --request-timeout).")(wrapper)
        return wrapper

    return decorate


def check_watch(watch: WatchOptions, kube, output) -> None:
    """Usage errors (exit 2), said before anything is read."""
    if watch.events and not watch.on:
        raise click.UsageError("--output-watch-events can only be used with --watch or --watch-only")
    if watch.on and kube.snapshot:
        raise click.UsageError("-w/--watch follows a live cluster; a snapshot does not change (drop --snapshot)")
