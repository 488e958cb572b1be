"""Rewrite resource.k8s.io/v1 test objects into the 1.36-era generation (v1beta1, v1alpha2).

v1beta1 puts the exact-request fields directly on the request and device fields under ``basic``;
PodGroups were scheduling.k8s.io/v1alpha2. Everything else is unchanged.
"""

from __future__ import annotations

import copy

OLD_SERVED = {"resource.k8s.io": ["v1beta1"], "scheduling.k8s.io": ["v1alpha2"]}


def to_v1beta1(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    api, kind = obj.get("apiVersion", ""), obj.get("kind")
    if api == "scheduling.k8s.io/v1beta1":
        obj["apiVersion"] = "scheduling.k8s.io/v1alpha2"
    if api != "resource.k8s.io/v1":
        return obj
    obj["apiVersion"] = "resource.k8s.io/v1beta1"
    if kind == "ResourceClaim":
        for request in obj.get("spec", {}).get("devices", {}).get("requests", []):
            request.update(request.pop("exactly", {}))
    if kind == "ResourceSlice":
        obj["spec"]["devices"] = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
                                  for d in obj["spec"].get("devices", [])]
    return obj
