"""A command's inputs: open the source (cluster or snapshot), fetch the named object first, join
the rest of the reads, and report what could not be read with the exit code it implies.

(Not ``runtime``: in this tool ``--runtime`` is the container runtime, containerd or CRI-O.)"""

from __future__ import annotations

from pathlib import Path

from kubectl_dra.env import Environment
from kubectl_dra.errors import ApiError, InputError, NotFoundError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.sources import Opened, open_source
from kubectl_dra.model.claim import ResourceClaim, ResourceClaimTemplate
from kubectl_dra.model.inventory import Inventory, Problem
from kubectl_dra.printers.problems import problem_lines

# The plain ``claims`` list builds views of claims only (tests/e2e/test_light_paths.py): the Pod, slice,
# Node and Karpenter views and the catalog reader below cost ~130 ms to import, so each function that
# needs them imports them under ``# start-up: light``.


def open_for(env: Environment, kube: KubeOptions) -> Opened:
    """Open the command's source and say, once, what the user must know about it."""
    opened = open_source(kube)
    for notice in opened.notices:
        env.error(notice)
    return opened


def report_problems(env: Environment, inventory: Inventory) -> ExitStatus:
    """Problems go to stderr, one line each; any error-level problem makes the result partial."""
    for line in problem_lines(inventory):
        env.error(line)
    return ExitStatus.PARTIAL if any(p.severity == "error" for p in inventory.problems) else ExitStatus.OK


def require_kinds(env: Environment, inventory: Inventory, *models) -> None:
    """Stop with exit 3 when a kind the output is made of could not be read: an empty table or
    list would say "none" where the truth is "unknown"."""
    missing = [m.KIND for m in models if m.KIND not in inventory.read_kinds]
    if missing:
        report_problems(env, inventory)
        raise ApiError(f"nothing to show: {' and '.join(missing)} objects could not be read (see above)")


def fetch_named(env: Environment, opened: Opened, model, namespace: str | None, name: str):
    """One object by name, read as a one-item list (``metadata.name`` field selector); a
    namespaced kind with ``namespace`` None (``-A``) is looked up in every namespace and must be
    in exactly one.

    Returns the object and the inventory it came in (whose problems the caller keeps);
    raises :class:`NotFoundError` after reporting what could not be read.
    """
    first = opened.source.read([ReadRequest(model, namespace, field_selector=f"metadata.name={name}")])
    if model.NAMESPACED and namespace is None:
        matches = [obj for obj in first.all(model) if obj.name == name]
        if len(matches) > 1:
            report_problems(env, first)
            raise InputError(f'{model.KIND.lower()} "{name}" exists in namespaces '
                             f"{', '.join(sorted(o.namespace or '' for o in matches))}: choose one with -n")
        found = matches[0] if matches else None
    else:
        found = first.get(model, namespace if model.NAMESPACED else None, name)
    if found is None:
        require_kinds(env, first, model)  # could not read is not "not found"
        report_problems(env, first)
        where = (" in any namespace" if namespace is None else f" in namespace {namespace}") if model.NAMESPACED else ""
        source = f" ({opened.source.description})" if not opened.live else ""
        raise NotFoundError(f'{model.KIND.lower()} "{name}" not found{where}{source}')
    return found, first


def read_versions(opened: Opened, nodes=()):
    """The cluster's releases (the API server's, each node's kubelet) for an answer's ``versions``."""
    # start-up: light
    from kubectl_dra.versions import cluster_versions

    version, source = opened.source.server_version()
    return cluster_versions(version, source, [n.status.node_info.kubelet_version for n in nodes])


def slice_requests(claims, source) -> list:
    """The slices an explanation needs: those of the pools its claims' devices came from, one
    list per (driver, pool) with a field selector, instead of every slice in the cluster. A server
    that cannot select on ``spec.pool.name`` (before 1.37, or of a release not known:
    docs/kubernetes/versions.md §2) lists each driver's slices and the pools are kept here."""
    # start-up: light
    from kubectl_dra.model.resource import ResourceSlice

    pairs = sorted({(r.driver, r.pool) for claim in claims if claim.status.allocation
                    for r in claim.status.allocation.devices.results})
    if source.field_selectable(ResourceSlice, "spec.pool.name"):
        return [ReadRequest(ResourceSlice, field_selector=f"spec.driver={driver},spec.pool.name={pool}",
                            keep_raw=False) for driver, pool in pairs]
    pools: dict[str, frozenset[str]] = {}
    for driver, pool in pairs:
        pools[driver] = pools.get(driver, frozenset()) | {pool}
    return [ReadRequest(ResourceSlice, field_selector=f"spec.driver={driver}", keep_raw=False,
                        keep=lambda rs, wanted=wanted: rs.spec.pool.name in wanted)
            for driver, wanted in pools.items()]


def claim_user_pods(namespace: str | None) -> ReadRequest:
    """The pods that can matter to a claim (see ``Pod.uses_claims``): what claim lists and the taint
    view read. The others are validated against a three-field view only and never kept."""
    # start-up: light
    from kubectl_dra.model.pod import Pod, PodWithoutClaims

    return ReadRequest(Pod, namespace, keep_raw=False, keep=Pod.uses_claims, skip=PodWithoutClaims)


def allocation_requests(namespace: str | None, node: str | None = None) -> list:
    """What explaining an allocation needs: the nodes (or one), every slice and DeviceTaintRule (their
    taints), the device classes, every claim (what they hold is in use) and the namespace's claim
    templates (a pod's claims before they exist)."""
    # start-up: light
    from kubectl_dra.model.node import Node
    from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule, ResourceSlice

    return [ReadRequest(Node, field_selector=f"metadata.name={node}" if node else None, keep_raw=False),
            ReadRequest(ResourceSlice, keep_raw=False), ReadRequest(DeviceClass, keep_raw=False),
            ReadRequest(DeviceTaintRule, required=False, keep_raw=False),
            ReadRequest(ResourceClaim, None, keep_raw=False),
            ReadRequest(ResourceClaimTemplate, namespace, required=False, keep_raw=False)]


def add_reads(opened: Opened, inventory: Inventory, requests) -> None:
    """Read more into an inventory: objects, problems and which kinds were read (the same object
    twice: the later read wins)."""
    opened.source.read(requests, into=inventory)


def join_first(inventory: Inventory, found, first: Inventory) -> Inventory:
    """Add the object fetched first (and what went wrong reading it) to the rest of the reads."""
    inventory.add(found)
    inventory.problems[:0] = first.problems
    return inventory


def read_around(opened: Opened, found, first: Inventory, requests) -> Inventory:
    """The rest of what a command needs, joined with the object fetched first."""
    return join_first(opened.source.read(requests), found, first)


def read_overlay_inputs(opened, catalog: Path | None, extra_requests=(), *, require_overlays: bool = True,
                        nodes: list | None = None):
    """Overlays, NodePools, NodeClaims, Nodes (+ extra kinds), and the instance types to evaluate;
    ``nodes`` already read are used instead of reading them again.

    Without Karpenter, ``overlays`` has nothing to say (an error); ``explain node`` goes on without."""
    # start-up: light
    from kubectl_dra.kube.snapshot import read_documents
    from kubectl_dra.model.karpenter import NodeClaim, NodeOverlay, NodePool
    from kubectl_dra.model.node import Node
    from kubectl_dra.overlays.catalog import from_catalog, infer_from_cluster

    inventory = opened.source.read([ReadRequest(NodeOverlay, required=require_overlays),
                                    ReadRequest(NodePool, required=require_overlays),
                                    ReadRequest(NodeClaim, required=False),
                                    *([ReadRequest(Node, required=False)] if nodes is None else []),
                                    *extra_requests])
    if require_overlays and "NodeOverlay" not in inventory.read_kinds:
        reason = next((p.message for p in inventory.problems if p.kind == "NodeOverlay"), "")
        raise NotFoundError(f"no NodeOverlays to explain: {reason or 'they could not be read'} "
                            "(is Karpenter installed, with the NodeOverlay CRD?)")
    documents = list(inventory.documents.get("InstanceTypeCatalog", []))
    if catalog is not None:
        if str(catalog) == "-" and getattr(opened.source, "path", None) == "-":
            raise InputError("--catalog - and --snapshot - both read standard input: give one of them a file")
        documents = [d for d in read_documents(catalog, allow_stdin=True) if isinstance(d, dict)
                     and d.get("kind") == "InstanceTypeCatalog"]
        if not documents:
            raise InputError(f"{catalog}: no InstanceTypeCatalog document in it")
    instance_types, catalog_problems = [], []
    for doc in documents:
        found: list[str] = []
        instance_types.extend(from_catalog(doc, found))
        where = str(catalog) if catalog is not None else inventory.document_files.get(id(doc))
        catalog_problems += [f"{where}: {m}" if where else m for m in found]
    inventory.problems += [Problem(message=m, kind="InstanceTypeCatalog") for m in catalog_problems]
    if not documents:
        instance_types = infer_from_cluster(inventory.all(Node) if nodes is None else nodes,
                                            inventory.all(NodeClaim), inventory.all(NodePool))
    return inventory, instance_types
