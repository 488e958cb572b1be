"""What every command does around its core: open the source, report problems, pick the exit code."""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_dra.cli.exitcodes import ExitStatus
from kubectl_dra.cli.options import KubeOptions
from kubectl_dra.env import Environment
from kubectl_dra.model.inventory import Inventory


@dataclass
class Opened:
    source: object  # LiveSource | SnapshotSource: both have read(requests) -> Inventory
    namespace: str | None  # namespace to read; None = every namespace
    default_namespace: str  # where a NAME argument is looked up
    live: bool


def open_source(kube: KubeOptions) -> Opened:
    """A snapshot when ``--snapshot`` is given (default: every namespace), else the cluster."""
    if kube.snapshot:
        from kubectl_dra.kube.snapshot import SnapshotSource

        namespace = None if kube.all_namespaces else kube.namespace
        return Opened(SnapshotSource(kube.snapshot), namespace, kube.namespace or "default", live=False)
    import os

    from kubectl_dra.kube.client import Session
    from kubectl_dra.kube.config import ConfigFlags, load_client_config
    from kubectl_dra.kube.live import LiveSource

    flags = ConfigFlags(
        kubeconfig=kube.kubeconfig, context=kube.context, cluster=kube.cluster, user=kube.user,
        namespace=kube.namespace, server=kube.server, token=kube.token,
        certificate_authority=kube.certificate_authority, client_certificate=kube.client_certificate,
        client_key=kube.client_key, tls_server_name=kube.tls_server_name,
        insecure_skip_tls_verify=kube.insecure_skip_tls_verify, as_user=kube.as_user,
        as_groups=tuple(kube.as_groups), as_uid=kube.as_uid, request_timeout=kube.request_timeout,
    )
    config = load_client_config(flags, environ=os.environ)
    session = Session(config.configuration, request_timeout=config.request_timeout,
                      headers=config.impersonate_headers)
    namespace = None if kube.all_namespaces else config.namespace
    return Opened(LiveSource(session), namespace, config.namespace, live=True)


def report_problems(env: Environment, inventory: Inventory) -> ExitStatus:
    """Problems go to stderr, one line each; any error-level problem makes the result partial."""
    status = ExitStatus.OK
    for problem in inventory.problems:
        env.error(f"{problem.severity}: {problem.message}")
        if problem.severity == "error":
            status = ExitStatus.PARTIAL
    return status


def fetch_named(env: Environment, opened: Opened, model, namespace: str | None, name: str):
    """One object by name, read as a one-item list (``metadata.name`` field selector).

    Returns the object and the inventory it came in (whose problems the caller keeps);
    raises :class:`NotFoundError` after reporting what could not be read.
    """
    from kubectl_dra.errors import NotFoundError
    from kubectl_dra.kube.reads import ReadRequest

    first = opened.source.read([ReadRequest(model, namespace, field_selector=f"metadata.name={name}")])
    found = first.get(model, namespace if model.NAMESPACED else None, name)
    if found is None:
        report_problems(env, first)
        where = f" in namespace {namespace}" if model.NAMESPACED else ""
        source = f" ({opened.source.description})" if not opened.live else ""
        raise NotFoundError(f'{model.KIND.lower()} "{name}" not found{where}{source}')
    return found, first


def join_first(inventory: Inventory, found, first: Inventory) -> Inventory:
    """Add the object fetched first (and what went wrong reading it) to the rest of the reads."""
    inventory.add(found)
    inventory.problems[:0] = first.problems
    return inventory


def read_around(opened: Opened, found, first: Inventory, requests) -> Inventory:
    """The rest of what a command needs, joined with the object fetched first."""
    return join_first(opened.source.read(requests), found, first)
