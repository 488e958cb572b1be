"""The fake API server, exercised only through the real ``kubernetes`` client over HTTP."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException



def pod(name, namespace="a", labels=None, node=None, phase="Running"):
    spec = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": spec, "status": {"phase": phase}}


def claim(name, namespace="a", labels=None, api_version="resource.k8s.io/v1"):
    return {"apiVersion": api_version, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}


def slice_(name, driver, node):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": []}}


def nodepool(name):
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {"requirements": []}}}}


@pytest.fixture
def connect(kubeconfig_for):
    """``connect(server)`` -> an ApiClient built from a kubeconfig, closed afterwards."""
    clients = []

    def make(server, **kwargs):
        path = kubeconfig_for(server, **kwargs)
        api = config.new_client_from_config(config_file=str(path), persist_config=False)
        clients.append(api)
        return api

    yield make
    for api in clients:
        api.close()


def raw_get(api, path, query=()):
    """GET through the client's own request pipeline (auth headers included), without models."""
    method, url, headers, _, _ = api.param_serialize(
        method="GET", resource_path=path, query_params=list(dict(query).items()),
        header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    response = api.call_api(method, url, header_params=headers)
    response.read()
    assert response.headers["Content-Type"] == "application/json"
    return response.status, json.loads(response.data), response


def error_body(exc: ApiException) -> dict:
    return json.loads(exc.body)


# ---- discovery ------------------------------------------------------------------------------


def test_discovery_defaults(apiserver, connect):
    api = connect(apiserver)
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    assert groups["resource.k8s.io"].preferred_version.version == "v1"
    assert [v.version for v in groups["scheduling.k8s.io"].versions] == ["v1beta1"]
    assert {"apps", "batch", "events.k8s.io"} <= set(groups)
    assert "karpenter.sh" not in groups and "kubectl-dra.io" not in groups

    status, doc, _ = raw_get(api, "/apis/resource.k8s.io/v1")
    assert status == 200 and doc["kind"] == "APIResourceList" and doc["groupVersion"] == "resource.k8s.io/v1"
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["resourceslices"]["namespaced"] is False
    assert by_name["resourceclaims"] | {"verbs": None} == {
        "name": "resourceclaims", "singularName": "resourceclaim", "namespaced": True,
        "kind": "ResourceClaim", "verbs": None}
    assert "list" in by_name["deviceclasses"]["verbs"]
    core = client.CoreV1Api(api).get_api_resources()
    assert {(r.name, r.namespaced) for r in core.resources} >= {("pods", True), ("nodes", False), ("events", True)}
    assert raw_get(api, "/apis/karpenter.sh/v1")[0] == 404
    assert raw_get(api, "/apis/resource.k8s.io/v1beta1")[0] == 404


def test_served_override_and_versions_from_objects(make_apiserver, connect):
    server = make_apiserver(
        [claim("c1", api_version="resource.k8s.io/v1"), nodepool("default"),
         {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": "o"}}],
        served={"resource.k8s.io": ["v1beta1", "v1", "v1beta2"], "scheduling.k8s.io": ["v1alpha2"]})
    api = connect(server)
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    assert [v.version for v in groups["resource.k8s.io"].versions] == ["v1", "v1beta2", "v1beta1"]
    assert groups["resource.k8s.io"].preferred_version.group_version == "resource.k8s.io/v1"
    assert [v.version for v in groups["scheduling.k8s.io"].versions] == ["v1alpha2"]
    assert [v.version for v in groups["karpenter.sh"].versions] == ["v1", "v1alpha1"]
    _, v1 = raw_get(api, "/apis/karpenter.sh/v1")[:2]
    _, v1alpha1 = raw_get(api, "/apis/karpenter.sh/v1alpha1")[:2]
    assert {r["name"] for r in v1["resources"]} >= {"nodepools", "nodeclaims"}
    assert "nodeoverlays" not in {r["name"] for r in v1["resources"]}
    assert {r["name"] for r in v1alpha1["resources"]} == {"nodeoverlays", "nodeoverlays/status"}

    # The same stored object, served under the requested version with apiVersion rewritten.
    status, doc, _ = raw_get(api, "/apis/resource.k8s.io/v1beta1/namespaces/a/resourceclaims")
    assert status == 200 and doc["kind"] == "ResourceClaimList" and doc["apiVersion"] == "resource.k8s.io/v1beta1"
    assert [(i["apiVersion"], i["kind"], i["metadata"]["name"]) for i in doc["items"]] == [
        ("resource.k8s.io/v1beta1", "ResourceClaim", "c1")]

    server.serve("resource.k8s.io", ["v1beta1"])
    assert raw_get(api, "/apis/resource.k8s.io/v1/resourceclaims")[0] == 404
    assert raw_get(api, "/apis/scheduling.k8s.io/v1alpha2")[0] == 200


def test_custom_objects_list_nodepools(make_apiserver, connect):
    server = make_apiserver([nodepool("default"), nodepool("gpu")])
    api = connect(server)
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert "karpenter.sh" in groups
    doc = client.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodepools")
    assert doc["kind"] == "NodePoolList" and doc["apiVersion"] == "karpenter.sh/v1"
    assert [i["metadata"]["name"] for i in doc["items"]] == ["default", "gpu"]
    meta = doc["items"][0]["metadata"]
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    one = client.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu")
    assert one["metadata"]["name"] == "gpu" and one["kind"] == "NodePool"


# ---- lists, selectors, pagination -----------------------------------------------------------


@pytest.fixture
def pods_server(make_apiserver):
    return make_apiserver([
        pod("web-1", "a", {"app": "web", "tier": "front"}, node="n1"),
        pod("web-2", "a", {"app": "web", "tier": "back"}, node="n2", phase="Pending"),
        pod("db-1", "a", {"app": "db"}, node="n1"),
        pod("web-3", "b", {"app": "web", "env": "prod"}, node="n2"),
        pod("lonely", "b", {}, phase="Pending"),
    ])


def test_typed_lists_and_label_selectors(pods_server, connect):
    v1 = client.CoreV1Api(connect(pods_server))
    assert [p.metadata.name for p in v1.list_namespaced_pod("a").items] == ["db-1", "web-1", "web-2"]
    everything = v1.list_pod_for_all_namespaces()
    assert everything.kind == "PodList" and everything.metadata.resource_version
    assert [(p.metadata.namespace, p.metadata.name) for p in everything.items] == [
        ("a", "db-1"), ("a", "web-1"), ("a", "web-2"), ("b", "lonely"), ("b", "web-3")]

    def names(selector, namespace=None):
        result = (v1.list_namespaced_pod(namespace, label_selector=selector) if namespace
                  else v1.list_pod_for_all_namespaces(label_selector=selector))
        return sorted(p.metadata.name for p in result.items)

    assert names("app=web") == ["web-1", "web-2", "web-3"]
    assert names("app==web", "a") == ["web-1", "web-2"]
    assert names("app!=web") == ["db-1", "lonely"]
    assert names("tier in (front,back)") == ["web-1", "web-2"]
    assert names("tier notin (front)") == ["db-1", "lonely", "web-2", "web-3"]
    assert names("env") == ["web-3"]
    assert names("!app") == ["lonely"]
    assert names("app=web,tier in (back, front),!env") == ["web-1", "web-2"]


def test_field_selectors(pods_server, apiserver, connect):
    v1 = client.CoreV1Api(connect(pods_server))

    def names(selector):
        return sorted(p.metadata.name for p in v1.list_pod_for_all_namespaces(field_selector=selector).items)

    assert names("spec.nodeName=n1") == ["db-1", "web-1"]
    assert names("spec.nodeName==n2,status.phase=Running") == ["web-3"]
    assert names("status.phase!=Running") == ["lonely", "web-2"]
    assert names("metadata.name=db-1") == ["db-1"]
    assert names("metadata.namespace=b,spec.nodeName=") == ["lonely"]

    for obj in (slice_("s1", "gpu.example.com", "n1"), slice_("s2", "nic.example.com", "n1"),
                slice_("s3", "gpu.example.com", "n2")):
        apiserver.add(obj)
    api = connect(apiserver)
    slices = client.ResourceV1Api(api).list_resource_slice(field_selector="spec.driver=gpu.example.com")
    assert [s.metadata.name for s in slices.items] == ["s1", "s3"]
    _, doc, _ = raw_get(api, "/apis/resource.k8s.io/v1/resourceslices",
                        {"fieldSelector": "spec.nodeName=n1,spec.driver!=gpu.example.com"})
    assert [i["metadata"]["name"] for i in doc["items"]] == ["s2"]


def test_bad_selectors_are_400(pods_server, connect):
    api = connect(pods_server)
    with pytest.raises(ApiException) as exc:
        client.ResourceV1Api(api).list_resource_claim_for_all_namespaces(field_selector="spec.nodeName=n1")
    assert exc.value.status == 400
    assert error_body(exc.value)["message"] == "field label not supported: spec.nodeName"
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api).list_pod_for_all_namespaces(label_selector="app in web")
    assert exc.value.status == 400 and error_body(exc.value)["reason"] == "BadRequest"


def test_pagination_follows_continue(make_apiserver, connect):
    server = make_apiserver([claim(f"c{i}", "ab"[i % 2]) for i in range(5)])
    rapi = client.ResourceV1Api(connect(server))
    seen, token, pages = [], None, 0
    while True:
        page = rapi.list_resource_claim_for_all_namespaces(limit=2, _continue=token)
        pages += 1
        seen += [(c.metadata.namespace, c.metadata.name) for c in page.items]
        token = page.metadata._continue
        if pages == 1:
            assert page.metadata.remaining_item_count == 3
        if not token:
            break
    assert pages == 3
    assert seen == [("a", "c0"), ("a", "c2"), ("a", "c4"), ("b", "c1"), ("b", "c3")]
    lists = server.list_requests("resourceclaims")
    assert len(lists) == 3 and [r.query.get("limit") for r in lists] == ["2", "2", "2"]
    assert "continue" not in lists[0].query and lists[1].query["continue"]

    # A namespaced list with a selector pages over matching objects only.
    first = rapi.list_namespaced_resource_claim("a", limit=1, field_selector="metadata.name!=c0")
    rest = rapi.list_namespaced_resource_claim("a", limit=1, field_selector="metadata.name!=c0",
                                               _continue=first.metadata._continue)
    assert [c.metadata.name for c in first.items + rest.items] == ["c2", "c4"]
    assert rest.metadata._continue is None and first.metadata.remaining_item_count is None

    # The server may return fewer items than asked for.
    server.page_size_cap = 1
    assert len(rapi.list_resource_claim_for_all_namespaces(limit=500).items) == 1
    assert len(rapi.list_resource_claim_for_all_namespaces().items) == 5


def test_expired_continue_token_is_410(make_apiserver, connect):
    server = make_apiserver([claim(f"c{i}") for i in range(3)])
    rapi = client.ResourceV1Api(connect(server))
    first = rapi.list_resource_claim_for_all_namespaces(limit=1)
    server.expire_continue_tokens()
    with pytest.raises(ApiException) as exc:
        rapi.list_resource_claim_for_all_namespaces(limit=1, _continue=first.metadata._continue)
    assert exc.value.status == 410
    body = error_body(exc.value)
    assert body["kind"] == "Status" and body["reason"] == "Expired" and body["code"] == 410
    # The inconsistent-continue token in the 410 body, and the original one, both work afterwards.
    after = rapi.list_resource_claim_for_all_namespaces(limit=5, _continue=body["metadata"]["continue"])
    assert [c.metadata.name for c in after.items] == ["c1", "c2"]
    again = rapi.list_resource_claim_for_all_namespaces(limit=5, _continue=first.metadata._continue)
    assert [c.metadata.name for c in again.items] == ["c1", "c2"]
    with pytest.raises(ApiException) as exc:
        rapi.list_resource_claim_for_all_namespaces(_continue="not-a-token")
    assert exc.value.status == 400


# ---- single objects and errors --------------------------------------------------------------


def test_get_and_not_found(pods_server, connect):
    api = connect(pods_server)
    v1 = client.CoreV1Api(api)
    got = v1.read_namespaced_pod("web-1", "a")
    assert got.metadata.labels == {"app": "web", "tier": "front"} and got.spec.node_name == "n1"
    with pytest.raises(ApiException) as exc:
        v1.read_namespaced_pod("nope", "a")
    assert exc.value.status == 404
    assert error_body(exc.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "group": "", "kind": "pods"}, "code": 404}
    with pytest.raises(ApiException) as exc:
        client.ResourceV1Api(api).read_namespaced_resource_claim("nope", "a")
    assert error_body(exc.value)["message"] == 'resourceclaims.resource.k8s.io "nope" not found'
    status, doc, _ = raw_get(api, "/apis/resource.k8s.io/v1/widgets")
    assert status == 404 and doc["reason"] == "NotFound"
    assert doc["message"] == "the server could not find the requested resource"
    assert raw_get(api, "/api/v1/namespaces/a/nodes")[0] == 404  # cluster-scoped under a namespace


def test_forbidden_injection(make_apiserver, connect):
    server = make_apiserver([claim("c1"), pod("p", "a")])
    api = connect(server)
    server.fail(403, resource="resourceclaims", times=1)
    with pytest.raises(ApiException) as exc:
        client.ResourceV1Api(api).list_resource_claim_for_all_namespaces()
    assert exc.value.status == 403
    body = error_body(exc.value)
    assert body["reason"] == "Forbidden" and body["code"] == 403
    assert body["message"] == ('resourceclaims.resource.k8s.io is forbidden: User "x" cannot list resource '
                               '"resourceclaims" in API group "resource.k8s.io" at the cluster scope')
    assert body["details"] == {"group": "resource.k8s.io", "kind": "resourceclaims"}
    assert len(client.ResourceV1Api(api).list_resource_claim_for_all_namespaces().items) == 1  # times=1 used up

    server.fail(403, resource="pods")
    assert len(client.ResourceV1Api(api).list_namespaced_resource_claim("a").items) == 1
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api).list_namespaced_pod("a")
    assert error_body(exc.value)["message"] == ('pods is forbidden: User "x" cannot list resource "pods" in '
                                                'API group "" in the namespace "a"')
    with pytest.raises(ApiException):
        client.CoreV1Api(api).list_namespaced_pod("a")  # times=None: every time
    server.clear_failures()
    assert len(client.CoreV1Api(api).list_namespaced_pod("a").items) == 1


def test_other_injected_errors(make_apiserver, connect):
    server = make_apiserver([claim("c1")])
    api = connect(server)
    rapi = client.ResourceV1Api(api)
    # urllib3's default Retry in the client's pool honours Retry-After on a GET by itself...
    server.fail(429, resource="resourceclaims.resource.k8s.io", retry_after=0, times=1)
    assert len(rapi.list_resource_claim_for_all_namespaces().items) == 1
    assert len(server.list_requests("resourceclaims")) == 2
    # ...but not on a POST, which surfaces the 429 with its header and details.
    server.fail(429, resource="resourceclaims", method="POST", retry_after=3, times=1)
    with pytest.raises(ApiException) as exc:
        rapi.create_namespaced_resource_claim("a", claim("c2"))
    assert exc.value.status == 429 and exc.value.headers["Retry-After"] == "3"
    assert error_body(exc.value)["reason"] == "TooManyRequests"
    assert error_body(exc.value)["details"]["retryAfterSeconds"] == 3

    for code, reason in ((401, "Unauthorized"), (404, "NotFound"), (410, "Expired"), (500, "InternalError"),
                         (503, "ServiceUnavailable")):
        server.fail(code, resource="resourceclaims", times=1)
        with pytest.raises(ApiException) as exc:
            rapi.list_namespaced_resource_claim("a")
        assert (exc.value.status, error_body(exc.value)["reason"]) == (code, reason)

    server.fail(503, body_reason="Unavailable", times=2)  # no resource: discovery fails too
    assert raw_get(api, "/apis")[:2][0] == 503
    assert raw_get(api, "/apis/resource.k8s.io/v1/resourceclaims")[1]["reason"] == "Unavailable"
    assert raw_get(api, "/apis")[0] == 200

    server.fail(500, resource="resourceclaims", method="PATCH")  # other methods unaffected
    assert len(rapi.list_resource_claim_for_all_namespaces().items) == 1


def test_token_enforcement(make_apiserver, connect):
    server = make_apiserver(token="s3cret")
    assert client.CoreApi(connect(server)).get_api_versions().versions == ["v1"]
    with pytest.raises(ApiException) as exc:
        client.CoreApi(connect(server, token="wrong")).get_api_versions()
    assert exc.value.status == 401


# ---- request log ----------------------------------------------------------------------------


def test_request_log(pods_server, connect):
    api = connect(pods_server)
    client.ApisApi(api).get_api_versions()
    v1 = client.CoreV1Api(api)
    v1.list_namespaced_pod("a", label_selector="app=web", limit=10)
    v1.list_pod_for_all_namespaces()
    v1.read_namespaced_pod("web-1", "a")
    client.ResourceV1Api(api).list_resource_claim_for_all_namespaces()

    assert [(r.method, r.path) for r in pods_server.requests] == [
        ("GET", "/apis/"), ("GET", "/api/v1/namespaces/a/pods"), ("GET", "/api/v1/pods"),
        ("GET", "/api/v1/namespaces/a/pods/web-1"), ("GET", "/apis/resource.k8s.io/v1/resourceclaims")]
    assert len(pods_server.list_requests()) == 3
    pods = pods_server.list_requests("pods")
    assert len(pods) == 2 and pods[0].query == {"labelSelector": "app=web", "limit": "10"}
    assert pods_server.list_requests("resourceclaims.resource.k8s.io")[0].route.group == "resource.k8s.io"
    assert pods_server.list_requests("resourceclaims.apps") == []
    first = pods_server.requests[0]
    assert first.headers["Authorization"] == "Bearer test-token" and first.body is None


def test_concurrent_requests(pods_server, connect):
    api = connect(pods_server)
    errors = []

    def worker():
        try:
            for _ in range(5):
                assert len(client.CoreV1Api(api).list_namespaced_pod("a").items) == 3
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(pods_server.list_requests("pods")) == 30


# ---- writes and watch -----------------------------------------------------------------------


def test_custom_object_writes(make_apiserver, connect):
    server = make_apiserver(served={"kubectl-dra.io": ["v1alpha1"]})
    co = client.CustomObjectsApi(connect(server))
    args = ("kubectl-dra.io", "v1alpha1", "nodeenforcementreports")
    report = {"apiVersion": "kubectl-dra.io/v1alpha1", "kind": "NodeEnforcementReport",
              "metadata": {"name": "node-1", "labels": {"a": "1"}}, "spec": {"node": "node-1"}}
    created = co.create_cluster_custom_object(*args, report)
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as exc:
        co.create_cluster_custom_object(*args, report)
    assert exc.value.status == 409
    assert error_body(exc.value)["reason"] == "AlreadyExists"
    assert error_body(exc.value)["message"] == 'nodeenforcementreports.kubectl-dra.io "node-1" already exists'

    patched = co.patch_cluster_custom_object(*args, "node-1", {"metadata": {"labels": {"b": "2", "a": None}}})
    assert patched["metadata"]["labels"] == {"b": "2"}
    assert patched["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    # status goes through the subresource; the main resource keeps it.
    co.patch_cluster_custom_object_status(*args, "node-1", {"status": {"enforced": True}})
    replaced = co.replace_cluster_custom_object(*args, "node-1", {**report, "status": {"enforced": False},
                                                                  "spec": {"node": "node-1", "x": 1}})
    assert replaced["status"] == {"enforced": True} and replaced["spec"]["x"] == 1
    stale = {**report, "metadata": {"name": "node-1", "resourceVersion": created["metadata"]["resourceVersion"]}}
    with pytest.raises(ApiException) as exc:
        co.replace_cluster_custom_object(*args, "node-1", stale)
    assert exc.value.status == 409 and error_body(exc.value)["reason"] == "Conflict"
    assert server.get("nodeenforcementreports", "node-1")["spec"] == {"node": "node-1", "x": 1}

    co.delete_cluster_custom_object(*args, "node-1")
    with pytest.raises(ApiException) as exc:
        co.get_cluster_custom_object(*args, "node-1")
    assert exc.value.status == 404
    writes = [r for r in server.requests if r.method != "GET"]
    assert [r.method for r in writes] == ["POST", "POST", "PATCH", "PATCH", "PUT", "PUT", "DELETE"]
    assert writes[2].headers["Content-Type"] == "application/merge-patch+json"


def test_typed_core_writes(apiserver, connect):
    v1 = client.CoreV1Api(connect(apiserver))
    event = client.CoreV1Event(
        metadata=client.V1ObjectMeta(generate_name="node-1.", namespace="default"),
        involved_object=client.V1ObjectReference(kind="Node", name="node-1"),
        reason="DRAEnforced", message="ok", type="Normal")
    created = v1.create_namespaced_event("default", event)
    assert created.metadata.name.startswith("node-1.") and created.reason == "DRAEnforced"
    found = v1.list_namespaced_event("default", field_selector="involvedObject.name=node-1,reason=DRAEnforced")
    assert [e.metadata.name for e in found.items] == [created.metadata.name]

    v1.create_namespaced_pod("default", pod("p", "default", {"app": "x"}))
    strategic = v1.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"extra": "y"}}})
    assert strategic.metadata.labels == {"app": "x", "extra": "y"}
    assert apiserver.requests[-1].headers["Content-Type"] == "application/strategic-merge-patch+json"
    jp = v1.patch_namespaced_pod("p", "default", [{"op": "replace", "path": "/metadata/labels/app", "value": "z"}])
    assert jp.metadata.labels["app"] == "z"
    v1.delete_namespaced_pod("p", "default")
    assert apiserver.get("pods", "p", "default") is None


def test_watch_stream(pods_server, connect):
    pods_server.watch_timeout = 1.0
    v1 = client.CoreV1Api(connect(pods_server))
    w = watch.Watch()
    seen = []
    for event in w.stream(v1.list_namespaced_pod, "b", timeout_seconds=1):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:  # the initial state is in; now change something
            pods_server.add(pod("late", "b"))
            pods_server.add(pod("elsewhere", "a"))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "lonely"), ("ADDED", "web-3"), ("ADDED", "late")]
    assert pods_server.list_requests("pods") == []  # a watch is not a list
