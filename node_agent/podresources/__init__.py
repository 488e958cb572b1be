"""A client of the kubelet's PodResources API over its unix socket (generated stubs beside it,
from ``api.proto``; ``scripts/gen-podresources`` regenerates them)."""

from __future__ import annotations

from kubectl_dra.nodestate.podresources import ClaimResourceRow, PodResourcesView

SOCKET = "pod-resources/kubelet.sock"  # under the kubelet's root directory


def list_pod_resources(socket_path: str, timeout: float = 5.0) -> PodResourcesView:
    """``List`` once; raises ``grpc.RpcError`` (or OSError) when the kubelet does not answer."""
    import grpc

    from node_agent.podresources import api_pb2, api_pb2_grpc

    with grpc.insecure_channel(f"unix://{socket_path}", options=[("grpc.enable_retries", 0)]) as channel:
        reply = api_pb2_grpc.PodResourcesListerStub(channel).List(api_pb2.ListPodResourcesRequest(), timeout=timeout)
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
