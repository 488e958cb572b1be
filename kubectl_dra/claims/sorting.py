"""``claims --sort-by``: the keys, over the rows of the claims list. A module of its own, free of the
model, because the flag's check and its completion read it before anything else is loaded."""

from __future__ import annotations

SORT_KEYS = {
    "name": lambda i: (i.name, i.namespace),
    "namespace": lambda i: (i.namespace, i.name),
    "node": lambda i: (i.node or "", i.namespace, i.name),
    "state": lambda i: (",".join(i.state), i.namespace, i.name),
    "age": lambda i: (i.creation_timestamp.timestamp() if i.creation_timestamp else 0.0, i.namespace, i.name),
    "devices": lambda i: (len(i.devices), i.namespace, i.name),
    "reservations": lambda i: (len(i.reserved_for), i.namespace, i.name),
    "findings": lambda i: (len(i.findings), i.namespace, i.name),
}
SORT_ALIASES = {".metadata.name": "name", ".metadata.namespace": "namespace",
                ".metadata.creationTimestamp": "age", "creationTimestamp": "age"}


def sort_key(name: str):
    """``--sort-by``: a column-like key or the kubectl JSONPath spelling of one."""
    return SORT_KEYS.get(SORT_ALIASES.get(name, name))
