"""A client of the kubelet's PodResources API over its unix socket (generated stubs beside it,
from ``api.proto``; ``scripts/gen-podresources`` regenerates them). The node scan
(``kubectl_dra.nodescan``) is handed :func:`list_pod_resources` by the agent."""

from __future__ import annotations

from kubectl_dra.nodescan.nodedra import PodResourcesUnavailable
from kubectl_dra.nodestate.podresources import ClaimResourceRow, PodResourcesView

try:
    import grpc

    from node_agent.podresources import api_pb2, api_pb2_grpc
except ImportError as exc:  # a gRPC build this system cannot load (e.g. no libstdc++): say so, read the rest
    grpc = None
    _UNLOADABLE = f"the gRPC client cannot be loaded here: {exc}"


def list_pod_resources(socket_path: str, timeout: float = 5.0) -> PodResourcesView:
    """``List`` once; raises :class:`PodResourcesUnavailable` when the kubelet does not answer or
    this system cannot load the gRPC client."""
    if grpc is None:
        raise PodResourcesUnavailable(_UNLOADABLE)
    try:
        with grpc.insecure_channel(f"unix://{socket_path}", options=[("grpc.enable_retries", 0)]) as channel:
            reply = api_pb2_grpc.PodResourcesListerStub(channel).List(api_pb2.ListPodResourcesRequest(),
                                                                      timeout=timeout)
    except grpc.RpcError as exc:
        detail = exc.details() if hasattr(exc, "details") else str(exc)
        code = exc.code().name if hasattr(exc, "code") else "error"
        hint = " (connecting needs write access to the socket, which the kubelet creates for root)" \
            if "ermission" in (detail or "") else ""
        raise PodResourcesUnavailable(f"List failed: {code}: {detail}{hint}") from None
    pods, rows = set(), []
    for pod in reply.pod_resources:
        pods.add((pod.namespace, pod.name))
        for container in pod.containers:
            for dynamic in container.dynamic_resources:
                for resource in dynamic.claim_resources or [None]:
                    rows.append(ClaimResourceRow(
                        pod_namespace=pod.namespace, pod_name=pod.name, container=container.name,
                        claim_namespace=dynamic.claim_namespace or pod.namespace, claim_name=dynamic.claim_name,
                        driver=resource.driver_name if resource else "", pool=resource.pool_name if resource else "",
                        device=resource.device_name if resource else "",
                        share_id=resource.share_id if resource is not None and resource.HasField("share_id") else None,
                        cdi_ids=tuple(d.name for d in resource.cdi_devices) if resource else ()))
    return PodResourcesView(pods=frozenset(pods), rows=tuple(rows))
