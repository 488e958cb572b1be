"""Opening what a command reads: snapshot files, or the cluster the kubeconfig names (exactly as
kubectl resolves it). Both programs open their source here."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.snapshot import SnapshotSource


@dataclass
class Opened:
    source: object  # LiveSource | SnapshotSource: both have read(requests) -> Inventory
    namespace: str | None  # namespace to read; None = every namespace
    default_namespace: str | None  # where a NAME argument is looked up; None: in every namespace (a snapshot)
    live: bool
    notices: list[str] = field(default_factory=list)  # said once on stderr (e.g. TLS verification off)


def open_source(kube: KubeOptions, *, http2: bool = False) -> Opened:
    """A snapshot when ``--snapshot`` is given, else the cluster. A snapshot has no current
    namespace: without ``-n`` lists cover every namespace and a NAME is looked up in all of them
    (the names completion offers), which must then hold it once. ``http2``: every request and
    watch over one connection (the node agent, which keeps its watches open for days)."""
    if kube.snapshot:
        namespace = None if kube.all_namespaces else kube.namespace
        return Opened(SnapshotSource(kube.snapshot), namespace, namespace, live=False)

    # start-up: offline
    from kubectl_dra.kube.client import Session
    from kubectl_dra.kube.config import load_client_config
    from kubectl_dra.kube.live import LiveSource

    config = load_client_config(kube, environ=os.environ)  # KubeOptions are kubectl's ConfigFlags and more
    kind = Session
    if http2:
        # start-up: offline
        from kubectl_dra.kube.http2 import Http2Session as kind
    session = kind(config.configuration, request_timeout=config.request_timeout,
                      headers=config.impersonate_headers, credential=config.credential)
    namespace = None if kube.all_namespaces else config.namespace
    notices = []
    if not config.configuration.verify_ssl:
        # start-up: offline
        import urllib3

        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)  # said once instead
        notices.append(f"warning: not verifying the certificate of {config.configuration.host} "
                       "(--insecure-skip-tls-verify): anyone on the path can read and change this traffic")
    return Opened(LiveSource(session), namespace, config.namespace, live=True, notices=notices)
