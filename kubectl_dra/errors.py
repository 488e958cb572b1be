"""Errors the user can act on.

Every failure that reaches the command line is one of these: the CLI prints ``str(error)`` as a
single line on stderr and exits 3, "error, nothing shown" (the one mapping is in ``cli/__init__.py``;
the agent's scan does the same). Anything else is a bug and gets a traceback only under ``--debug``.
"""

from __future__ import annotations


class DRAError(Exception):
    """Base class: a message meant for the user."""


class InputError(DRAError):
    """A file, flag value or object that cannot be understood (malformed YAML, bad quantity)."""


class QuantityError(InputError, ValueError):
    """A string that is not a Kubernetes quantity."""


class ConfigError(DRAError):
    """The kubeconfig (or in-cluster config) cannot produce a usable connection."""


class ApiError(DRAError):
    """The API server could not be reached or refused the request as a whole."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class NotFoundError(DRAError):
    """The object the user named does not exist (in the cluster or the snapshot)."""
