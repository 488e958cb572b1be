"""The connection settings a command was given (kubectl's flags and ``--snapshot``), as plain data:
what both programs pass to :func:`kubectl_dra.kube.sources.open_source`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigFlags:
    """kubectl's global connection flags; ``None`` (or empty) means the flag was not given."""

    kubeconfig: str | None = None
    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    namespace: str | None = None
    server: str | None = None
    token: str | None = None
    certificate_authority: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    tls_server_name: str | None = None
    insecure_skip_tls_verify: bool = False
    as_user: str | None = None
    as_groups: tuple[str, ...] = ()
    as_uid: str | None = None
    request_timeout: str | None = None  # kubectl syntax: "0" (none), "30", "1s", "2m", "1m30s", "500ms"


@dataclass(frozen=True)
class KubeOptions(ConfigFlags):
    """kubectl's flags plus what is ours: ``-A``, ``--snapshot``, ``--debug``."""

    all_namespaces: bool = False
    snapshot: str | None = None
    debug: bool = False
