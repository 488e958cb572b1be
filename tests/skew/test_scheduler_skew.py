"""Why is it Pending, checked against the real kube-scheduler of 1.34, 1.35 and 1.36 (each with its
own defaults), on the generated scenarios of the cluster tier's pending oracle
(tests/cluster/test_pending_oracle.py: the same generator and seeds).

There is no kube-controller-manager here (the skew tier builds only the API server and the
scheduler), so each claim a scenario would make from a template is created directly, with the
template's spec, and the pod names it: what the scheduler sees is the same.

For each pending pod the explainer, on the default profile of the cluster's release, either writes
exactly the message that release's scheduler writes (up to " preemption:"), or says it cannot
claim one (``messageKnown`` false, with a notEvaluated entry naming the rule that differs); a pod
the scheduler binds is never called unschedulable, and the node it took is called fitting.
``kubectl dra explain pod`` on the live pending pod says the same as the explainer (the oracle's
``judge``).
"""

from __future__ import annotations

import copy
import time

import pytest
from clusterobjects import settle, wait_for
from loader import load
from test_pending_oracle import (PREFIX, SEEDS, _delete, _items, _seeds, cli_message, judge, mismatch_report,
                                 record_of, scenario)
from test_pending_oracle import clean_slate as _clean_slate

from kubectl_dra.kube.options import KubeOptions
from kubectl_dra.kube.sources import open_source
from kubectl_dra.model.registry import parse_object

def without_templates(world: dict) -> tuple[list[dict], list[dict]]:
    """The pending pods naming claims instead of templates, and those claims (what the resourceclaim
    controller would have made from each template before the scheduler tried the pod)."""
    templates = {t["metadata"]["name"]: t for t in world["templates"]}
    pods, claims = [], []
    for pod in world["pending"]:
        pod = copy.deepcopy(pod)
        for ref in pod["spec"].get("resourceClaims") or []:
            template = templates.get(ref.pop("resourceClaimTemplateName", None) or "")
            if template is None:
                continue
            name = f"{pod['metadata']['name']}-{ref['name']}"
            claims.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": pod["metadata"]["namespace"]},
                           "spec": copy.deepcopy(template["spec"]["spec"])})
            ref["resourceClaimName"] = name
        pods.append(pod)
    return pods, claims


def clean_slate(plane) -> None:
    """The oracle's clean slate; first the scenario's pending pods go (the scheduler would allocate a
    claim again for one), then the claims' finalizers, which the scheduler adds when it
    allocates and kube-controller-manager (not running here) would remove."""
    pods = [f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}"
            for p in _items(plane, "/api/v1/pods")
            if p["metadata"]["namespace"].startswith(f"{PREFIX}-") and not p["spec"].get("nodeName")]
    for path in pods:
        _delete(plane, path)
    wait_for("the scenario's pods to be gone", lambda: all(plane.absent(p) for p in pods))
    for claim in _items(plane, "/apis/resource.k8s.io/v1/resourceclaims"):
        meta = claim["metadata"]
        if meta["namespace"].startswith(f"{PREFIX}-") and meta.get("finalizers"):
            plane.request("PATCH", f"/apis/resource.k8s.io/v1/namespaces/{meta['namespace']}/resourceclaims/"
                                   f"{meta['name']}", {"metadata": {"finalizers": None}},
                          content_type="application/merge-patch+json")
    _clean_slate(plane)


def explain_on(plane, kubeconfig: str, pod: dict, release: int):
    """What the explainer says about ``pod`` as the server would create it, on the default profile of
    the cluster's release."""
    from kubectl_dra.scheduling.explain import explain_scheduling
    from kubectl_dra.scheduling.profile import default_profile
    from kubectl_dra.scheduling.reads import scheduling_reads

    dry = plane.request("POST", f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods?dryRun=All", pod)
    model = parse_object(dry)
    source = open_source(KubeOptions(kubeconfig=kubeconfig)).source
    inventory = source.read(scheduling_reads(model, model.namespace))
    return explain_scheduling(model, inventory, default_profile(release))


@pytest.fixture(scope="module")
def plane(skew_scheduling):
    yield skew_scheduling
    clean_slate(skew_scheduling)


def test_the_explainer_writes_the_older_schedulers_message(plane, dra, tmp_path, capsys):
    release = int(plane.version.split(".")[1])
    records, mismatches = [], []
    counts = {"unschedulable": 0, "bound": 0, "not claimed": 0}
    began = time.monotonic()
    for seed in _seeds():
        clean_slate(plane)
        world = scenario(seed)
        ns = world["namespace"]
        assert ns.startswith(PREFIX)
        if plane.absent(f"/api/v1/namespaces/{ns}"):
            plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": ns}})
        pending, claims = without_templates(world)
        load(plane, [*world["runtime"], *world["nodes"], world["class"], *world["slices"], *world["bound"], *claims])
        time.sleep(0.5)  # the scheduler's informers see the new nodes and pods
        kubeconfig = str(plane.kubeconfig(tmp_path / f"kubeconfig-{seed}", namespace=ns))
        for pod in pending:
            name = pod["metadata"]["name"]
            mine = explain_on(plane, kubeconfig, pod, release)
            load(plane, [pod])
            got = settle(plane, ns, name)
            where = got["spec"].get("nodeName")
            problems, theirs = judge(mine, got, lambda: cli_message(dra, name, kubeconfig, ns), unclaimed_ok=True)
            counts["bound" if where else "unschedulable"] += 1
            counts["not claimed"] += not where and not mine.message_known
            record = record_of(seed, f"{ns}/{name}", mine, where, theirs, problems)
            records.append(record)
            if problems:
                mismatches.append(record)
    with capsys.disabled():
        print(f"\nscheduler {plane.version}: {len(records)} pending pods ({counts['unschedulable']} unschedulable, "
              f"{counts['bound']} bound, {counts['not claimed']} messages not claimed), "
              f"{len(records) - len(mismatches)} matched, {time.monotonic() - began:.0f}s")
    assert not mismatches, mismatch_report(mismatches)
    if _seeds() == SEEDS:  # most messages are claimed, and claimed right
        assert counts["unschedulable"] >= 25 and counts["not claimed"] <= counts["unschedulable"] // 4, counts
