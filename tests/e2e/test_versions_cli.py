"""The release a cluster runs, through the CLI against the fault server reporting it (``GET /version``):
what each answer names, the older scheduler's profile and words, the field selectors an older
server takes, and a release kubectl-dra does not model. The real 1.34-1.36 servers and schedulers
check the same in tests/skew; this is where a server can say what no real one of ours says."""

from __future__ import annotations

import pytest
from snapshot_objects import EXAMPLE, raw_objects


@pytest.fixture
def cluster_at(make_apiserver, kubeconfig_for):
    def start(version: str):
        server = make_apiserver(raw_objects(EXAMPLE))
        server.server_version = {**server.server_version, "gitVersion": version,
                                 "minor": version.split(".")[1]}
        return server, str(kubeconfig_for(server, namespace="ml"))
    return start


def slice_selectors(server) -> list[str]:
    return [r.query.get("fieldSelector", "") for r in server.requests
            if r.method == "GET" and r.route and r.route.plural == "resourceslices"]


@pytest.mark.parametrize("version, selector", [
    ("v1.37.2", "spec.driver=gpu.example.com,spec.pool.name=worker-gpu-2"),
    ("v1.36.3", "spec.driver=gpu.example.com"),  # no spec.pool.name field label before 1.37
    ("v1.34.4", "spec.driver=gpu.example.com"),
])
def test_explain_claim_selects_slices_as_the_release_can(cluster_at, dra, version, selector):
    server, kubeconfig = cluster_at(version)
    result = dra("explain", "claim", "eval-gpu", "-n", "default", "-o", "json", "--kubeconfig", kubeconfig)
    assert result.exit_code == 0, result
    assert slice_selectors(server) == [selector]
    devices = [d["device"] for d in result.json()["devices"]]
    assert devices == ["gpu-1"]  # the pool kept here, from the driver's slices


def test_a_pending_pod_on_1_34_follows_its_scheduler_and_says_so(cluster_at, dra):
    server, kubeconfig = cluster_at("v1.34.4")
    doc = dra("explain", "pod", "feature-store", "-o", "json", "--kubeconfig", kubeconfig).json()
    scheduling, versions = doc["scheduling"], doc["versions"]
    assert scheduling["release"] == "1.34" and "NodeDeclaredFeatures" not in scheduling["profile"]
    # 1.34's DynamicResources PostFilter: the pod has a claim, none of which can be deallocated
    assert scheduling["message"].endswith(". still not schedulable,"), scheduling["message"]
    assert versions["apiServer"] == "v1.34.4" and versions["apiServerSource"] == "GET /version"
    assert any(line.startswith("kube-scheduler 1.34: the message goes on with DynamicResources' PostFilter")
               for line in versions["applied"]), versions
    text = dra("explain", "pod", "feature-store", "--kubeconfig", kubeconfig)
    assert "every kube-scheduler 1.34 filter" in text.stdout
    notes = [line for line in text.stderr.splitlines() if line.startswith("note:")]
    assert notes[0] == "note: modelled on Kubernetes v1.37.2; this cluster runs API server v1.34.4, kubelet v1.37.0 " \
                       "(3 nodes)"
    assert len(notes) == len(set(notes)) and not any(line.startswith("note:") for line in text.stdout.splitlines())


def test_the_same_pod_on_1_37_has_no_postfilter_words_and_no_note(cluster_at, dra):
    server, kubeconfig = cluster_at("v1.37.2")
    text = dra("explain", "pod", "feature-store", "--kubeconfig", kubeconfig)
    assert "note:" not in text.stderr and "every kube-scheduler v1.37.2 filter" in text.stdout
    doc = dra("explain", "pod", "feature-store", "-o", "json", "--kubeconfig", kubeconfig).json()
    assert not doc["scheduling"]["message"] or "still not schedulable" not in doc["scheduling"]["message"]
    assert doc["versions"]["applied"] == [] and doc["versions"]["notKnown"] == []


@pytest.mark.parametrize("version", ["v1.38.0", "v1.33.9"])
def test_a_release_not_modelled_gets_no_scheduler_message(cluster_at, dra, version):
    server, kubeconfig = cluster_at(version)
    doc = dra("explain", "pod", "feature-store", "-o", "json", "--kubeconfig", kubeconfig).json()
    scheduling = doc["scheduling"]
    assert scheduling["message"] is None and scheduling["messageKnown"] is False
    assert any(u["plugin"] == "release" and version in u["why"] for u in scheduling["notEvaluated"])
    assert doc["versions"]["notKnown"][0].startswith(f"API server {version}: kubectl-dra models 1.34 to 1.37")
    text = dra("explain", "pod", "feature-store", "--kubeconfig", kubeconfig)
    assert "message not known: kube-scheduler v1.37.2 may write it otherwise" in text.stdout


def test_a_snapshot_names_the_release_it_was_taken_from(cluster_at, dra, tmp_path):
    server, kubeconfig = cluster_at("v1.35.4")
    saved = dra("snapshot", "-A", "-o", str(tmp_path / "s"), "--kubeconfig", kubeconfig)
    assert saved.exit_code == 0, saved
    offline = dra("claims", "-A", "-o", "json", "--snapshot", str(tmp_path / "s")).json()["versions"]
    assert offline["apiServer"] == "v1.35.4" and offline["apiServerSource"].endswith("serverVersion in its marker")
    hand_made = dra("claims", "-A", "-o", "json", "--snapshot", str(EXAMPLE)).json()["versions"]
    assert hand_made["apiServer"] is None and "a hand-made snapshot" in hand_made["apiServerSource"]
