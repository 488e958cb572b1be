"""Loading saved objects (examples, fixtures) into the real API server, meaning intact.

Objects are created as written, in the API version they claim, owners before dependents; the
server assigns new UIDs, so every reference to an old UID (ownerReferences, ``reservedFor``, the
agent's reports) is rewritten to the new one before it is sent. Statuses go through the status
subresource. An object with a deletionTimestamp is created and then deleted (its finalizers keep
it). The TaintNodesByCondition admission taints every new Node not-ready; the node lifecycle
controller (not running: no kubelets) would lift it, so the loader puts the written taints back.
A Job's generated selector carries its old UID, which the server refuses back: it is dropped
and the server generates it again (``kubectl replace`` of a saved Job has the same need).
Whatever else the server rejects is raised with the server's own message: the example or the
model was wrong.
"""

from __future__ import annotations

import copy
import json
import time
import urllib.error

from kubectl_dra.model.registry import by_group_kind, split_api_version

ORDER = ["Namespace", "CustomResourceDefinition", "RuntimeClass", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Node",
         "DeviceClass", "ResourceSlice", "NodePool", "NodeClaim", "NodeOverlay", "Deployment", "ReplicaSet",
         "StatefulSet", "Job", "PodGroup", "ResourceClaimTemplate", "Pod", "ResourceClaim", "NodeEnforcementReport"]
EXTRA = {("", "Namespace"): ("namespaces", False), ("apiextensions.k8s.io", "CustomResourceDefinition"):
         ("customresourcedefinitions", False), ("", "ServiceAccount"): ("serviceaccounts", True),
         ("node.k8s.io", "RuntimeClass"): ("runtimeclasses", False)}
DROP_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink",
             "deletionTimestamp", "deletionGracePeriodSeconds")


class Rejected(Exception):
    """The API server refused an object; the message is the server's."""


def collection(obj: dict) -> str:
    group, version = split_api_version(obj["apiVersion"])
    model = by_group_kind().get((group, obj["kind"]))
    plural, namespaced = (model.PLURAL, model.NAMESPACED) if model else EXTRA[(group, obj["kind"])]
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    namespace = obj["metadata"].get("namespace")
    return f"{base}/namespaces/{namespace}/{plural}" if namespaced and namespace else f"{base}/{plural}"


def _swap(value, uids: dict[str, str]):
    if isinstance(value, dict):
        return {k: _swap(v, uids) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, uids) for v in value]
    return uids.get(value, value) if isinstance(value, str) else value


def load(plane, objects: list[dict]) -> dict[str, str]:
    """Create every object; returns the old -> new UID map."""
    uids: dict[str, str] = {}
    rank = {kind: i for i, kind in enumerate(ORDER)}
    namespaces = {o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")}
    existing = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    for ns in sorted(namespaces - existing - {"default"}):
        try:
            plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # already there from an earlier load
                raise Rejected(f"Namespace {ns}: {_reason(exc)}") from None
    for obj in sorted(objects, key=lambda o: rank.get(o["kind"], len(ORDER))):
        old_uid = obj["metadata"].get("uid")
        created = _create(plane, obj, uids)
        if old_uid:
            uids[old_uid] = created["metadata"]["uid"]
        if obj["kind"] == "CustomResourceDefinition":
            _established(plane, obj["metadata"]["name"])
        if "status" in obj and obj["kind"] not in ("Namespace", "CustomResourceDefinition"):
            _status(plane, obj, created, uids)
        if obj["kind"] == "Node":
            try:
                plane.request("PATCH", f"/api/v1/nodes/{obj['metadata']['name']}",
                              {"spec": {"taints": obj.get("spec", {}).get("taints")}},
                              content_type="application/merge-patch+json")
            except urllib.error.HTTPError as exc:
                raise Rejected(f"Node {obj['metadata']['name']} taints: {_reason(exc)}") from None
        if obj["metadata"].get("deletionTimestamp"):
            plane.request("DELETE", f"{collection(obj)}/{obj['metadata']['name']}")
    return uids


def _create(plane, obj: dict, uids: dict[str, str] | None = None) -> dict:
    body = copy.deepcopy(obj)
    for key in DROP_META:
        body["metadata"].pop(key, None)
    body.pop("status", None)
    if obj["kind"] == "Job" and not body.get("spec", {}).get("manualSelector"):
        body["spec"].pop("selector", None)
        labels = body["spec"].get("template", {}).get("metadata", {}).get("labels", {})
        for key in ("controller-uid", "batch.kubernetes.io/controller-uid"):
            labels.pop(key, None)
    body = _swap(body, uids or {})
    try:
        return plane.request("POST", collection(obj), body)
    except urllib.error.HTTPError as exc:
        raise Rejected(f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']} "
                       f"({obj['apiVersion']}): {_reason(exc)}") from None


def _status(plane, obj: dict, created: dict, uids: dict[str, str]) -> None:
    """Write the object's status; a controller that touched it meanwhile (the node controllers right
    after a Node is created) makes the PUT conflict: then again on the current version."""
    path = f"{collection(obj)}/{obj['metadata']['name']}/status"
    current = created
    for attempt in range(6):
        body = copy.deepcopy(current)
        body["status"] = _swap(copy.deepcopy(obj["status"]), uids)
        try:
            plane.request("PUT", path, body)
            return
        except urllib.error.HTTPError as exc:
            if exc.code != 409 or attempt == 5:
                raise Rejected(f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']} "
                               f"status ({obj['apiVersion']}): {_reason(exc)}") from None
        current = plane.request("GET", f"{collection(obj)}/{obj['metadata']['name']}")


def _established(plane, name: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        crd = plane.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            time.sleep(1)  # discovery catches up a moment after Established
            return
        time.sleep(0.2)
    raise Rejected(f"CRD {name} never became Established")


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        return json.loads(exc.read().decode()).get("message", str(exc))
    except (ValueError, OSError):
        return str(exc)
