"""Exit codes, one table for every command (documented in the README and in ``--help``)."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    DIVERGED = 1  # verify: what the nodes enforce differs from the prediction (kubectl diff model)
    USAGE = 2  # a flag or argument is wrong
    ERROR = 3  # nothing to show: bad kubeconfig, unreachable server, malformed input, not found
    PARTIAL = 4  # output was printed, but some objects or kinds could not be read (see stderr)
    INTERRUPTED = 130


EPILOG = (
    "Connection flags (--kubeconfig, --context, --as, ...): kubectl dra options. Exit codes: 0 OK; 1 divergence or eviction found (verify, taints); 2 usage error; 3 error (nothing shown); "
    "4 partial result (something could not be read, see stderr)."
)
