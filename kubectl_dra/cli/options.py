"""Flag checks of the kubectl-dra commands (the output flags both programs share are in
``kubectl_dra/flags/output.py``)."""

from __future__ import annotations

import click


def check_label_selector(ctx, param, value):
    """A ``-l`` that does not parse is a bad flag value: exit 2 with click's "Invalid value for
    '-l' / '--selector'", said before anything is read (kubectl refuses it the same way)."""
    if value is None:
        return value
    # start-up: help - the commands that take -l load no selector parser for --help and completion
    from kubectl_dra.errors import InputError
    from kubectl_dra.kube.selectors import parse_label_selector

    try:
        parse_label_selector(value)
    except InputError as exc:
        raise click.BadParameter(str(exc)) from None
    return value
