"""A PodResources gRPC server on a unix socket, for tests: it answers ``List`` with what the test
says each pod's containers hold (or fails as told), the way the kubelet's server does."""

from __future__ import annotations

from concurrent import futures

import grpc

from node_agent.podresources import api_pb2, api_pb2_grpc


def pod_resources(namespace: str, name: str, containers: dict[str, list[dict]]) -> "api_pb2.PodResources":
    """``containers``: container -> [{claim, driver, pool, device, cdi: [ids], share_id?}]."""
    out = api_pb2.PodResources(name=name, namespace=namespace)
    for container, claims in containers.items():
        resources = out.containers.add(name=container)
        by_claim: dict[str, list[dict]] = {}
        for row in claims:
            by_claim.setdefault(row["claim"], []).append(row)
        for claim_name, rows in by_claim.items():
            dynamic = resources.dynamic_resources.add(claim_name=claim_name, claim_namespace=namespace)
            for row in rows:
                resource = dynamic.claim_resources.add(driver_name=row["driver"], pool_name=row["pool"],
                                                       device_name=row["device"])
                for cdi in row.get("cdi", ()):
                    resource.cdi_devices.add(name=cdi)
                if row.get("share_id"):
                    resource.share_id = row["share_id"]
    return out


class _Lister(api_pb2_grpc.PodResourcesListerServicer):
    def __init__(self, pods, fail):
        self.pods, self.fail, self.calls = pods, fail, 0

    def List(self, request, context):
        self.calls += 1
        if self.fail:
            context.abort(self.fail[0], self.fail[1])
        return api_pb2.ListPodResourcesResponse(pod_resources=self.pods)


class PodResourcesServer:
    def __init__(self, socket_path: str, pods: list, fail: tuple | None = None):
        self.socket_path = socket_path
        self.lister = _Lister(pods, fail)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        api_pb2_grpc.add_PodResourcesListerServicer_to_server(self.lister, self.server)
        self.server.add_insecure_port(f"unix://{socket_path}")

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop(grace=None).wait()
