"""kubectl's connection flags and ``--snapshot``, for every command of both programs.

Connection flags are accepted both before and after the subcommand (``kubectl dra -n ml claims``
and ``kubectl dra claims -n ml``); a value given after the subcommand wins.
"""

from __future__ import annotations

import functools

import click

from kubectl_dra.errors import ConfigError
from kubectl_dra.flags.completion import namespaces
from kubectl_dra.kube.options import KubeOptions


def _spec(*decls, **attrs):
    return decls, attrs


def _check_timeout(ctx, param, value):
    """A bad --request-timeout is a usage error (exit 2), said before anything is read."""
    if value is None:
        return value
    # start-up: help
    from kubectl_dra.kube.config import parse_duration

    try:
        parse_duration(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc).split(": ", 1)[-1]) from None
    return value


_KUBE_OPTION_SPECS = [
    _spec("--kubeconfig", metavar="FILE", type=click.Path(), help="Kubeconfig file to use (only this file, no merging)."),
    _spec("--context", metavar="NAME", help="Kubeconfig context to use."),
    _spec("--cluster", metavar="NAME", help="Kubeconfig cluster to use instead of the context's."),
    _spec("--user", metavar="NAME", help="Kubeconfig user to use instead of the context's."),
    _spec("-n", "--namespace", metavar="NS", shell_complete=namespaces, help="Namespace (default: the context's, else 'default')."),
    _spec("-A", "--all-namespaces", is_flag=True, default=None,
           help="All namespaces; -n is ignored."),
    _spec("-s", "--server", metavar="URL", help="API server address."),
    _spec("--token", metavar="TOKEN", help="Bearer token."),
    _spec("--certificate-authority", metavar="FILE", type=click.Path(), help="CA bundle for the server certificate."),
    _spec("--client-certificate", metavar="FILE", type=click.Path(), help="Client certificate for TLS."),
    _spec("--client-key", metavar="FILE", type=click.Path(), help="Client key for TLS."),
    _spec("--tls-server-name", metavar="NAME", help="Server name for TLS verification."),
    _spec("--insecure-skip-tls-verify", is_flag=True, default=None,
           help="Do not verify the server certificate (insecure)."),
    _spec("--as", "as_user", metavar="USER", help="Impersonate this user."),
    _spec("--as-group", "as_groups", metavar="GROUP", multiple=True, help="Impersonate this group (repeatable)."),
    _spec("--as-uid", metavar="UID", help="Impersonate this UID."),
    _spec("--request-timeout", metavar="DURATION", callback=_check_timeout,
           help="Time for each request with its retries, e.g. 30s, 2m; 0 = no timeout, as kubectl "
                "(unset: 10s to connect, 60s to read)."),
    _spec("--snapshot", metavar="PATH", envvar="KUBECTL_DRA_SNAPSHOT", type=click.Path(),
           help="Read objects from snapshot files (a file, a directory, or - for standard input) instead of a cluster."),
    _spec("--debug", is_flag=True, default=None, help="Show tracebacks for unexpected errors."),
]

_SHOWN = {"--namespace", "--all-namespaces", "--snapshot"}  # the rest: `kubectl dra options`
_KUBE_OPTIONS = [click.option(*decls, hidden=not _SHOWN & set(decls), **attrs) for decls, attrs in _KUBE_OPTION_SPECS]
_NAMES = [f.name for f in KubeOptions.__dataclass_fields__.values()]


def _is_set(value) -> bool:
    return value not in (None, (), False)


def kube_options(command):
    """Add the connection flags; the command receives them merged as ``kube=KubeOptions``."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        given = {name: kwargs.pop(name) for name in _NAMES}
        ctx = click.get_current_context()
        earlier = ctx.find_root().meta.get("kube_flags", {})
        merged = {name: given[name] if _is_set(given[name]) else earlier.get(name) for name in _NAMES}
        merged = {k: v for k, v in merged.items() if _is_set(v)}
        return command(*args, kube=KubeOptions(**merged), **kwargs)

    for option in reversed(_KUBE_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


_ROOT_OPTIONS = [click.option(*decls, hidden=True, **attrs) for decls, attrs in _KUBE_OPTION_SPECS]


def root_kube_options(group_callback):
    """The same flags on a group (the root, ``explain``); their values are kept for the
    subcommand to merge, a group's over its parent's (``kubectl dra -n a explain -n b pod x``
    reads b, as a later flag wins in kubectl)."""

    @functools.wraps(group_callback)
    def wrapper(*args, **kwargs):
        given = {name: kwargs.pop(name) for name in _NAMES}
        meta = click.get_current_context().meta  # shared by every context of one command line
        meta.setdefault("kube_flags", {}).update({k: v for k, v in given.items() if _is_set(v)})
        return group_callback(*args, **kwargs)

    for option in reversed(_ROOT_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


def connection_help() -> list[tuple[str, str]]:
    """(flags, help) rows for ``kubectl dra options``, as kubectl lists its global flags."""
    rows = []
    for decls, attrs in _KUBE_OPTION_SPECS:
        option = click.Option(list(decls), **attrs)
        record = option.get_help_record(click.Context(click.Command("options")))
        if record:
            rows.append(record)
    return rows
