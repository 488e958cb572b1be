"""Which release each rule follows (kubectl_dra/versions.py; docs/kubernetes/versions.md): reading
a release, what an older one does otherwise, and what an answer says about it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubectl_dra.scheduling.profile import DEFAULT_FILTERS, default_filters, default_profile, from_config
from kubectl_dra.versions import (DIFFERENCES, KUBELET, SCHEDULER, cluster_versions, differences, known, minor_of,
                                  note)

DOC = (Path(__file__).resolve().parents[2] / "docs" / "kubernetes" / "versions.md").read_text()


@pytest.mark.parametrize("text, minor", [
    ("v1.34.4", 34), ("v1.36.3", 36), ("v1.35.4-eks-1a2b3c", 35), ("1.37", 37), ("v1.37.2+k3s1", 37),
    ("v1.100.0", 100), ("", None), (None, None), ("v2.0.0", None), ("latest", None), ("v1.x", None),
])
def test_minor_of(text, minor):
    assert minor_of(text) == minor


@pytest.mark.parametrize("minor, is_known", [(33, False), (34, True), (36, True), (37, True), (38, False),
                                             (None, False)])
def test_the_releases_modelled_are_1_34_to_1_37(minor, is_known):
    assert known(minor) is is_known


def test_1_37_differs_from_nothing_and_older_releases_from_what_they_lack():
    assert differences(SCHEDULER, 37) == [] and differences(KUBELET, 37) == []
    assert differences(SCHEDULER, 38) == [] and differences(KUBELET, 33) == []  # not known: nothing claimed
    rules = lambda component, minor: {d.rule for d in differences(component, minor)}  # noqa: E731
    assert "NodeDeclaredFeatures" in rules(SCHEDULER, 35) and "NodeDeclaredFeatures" not in rules(SCHEDULER, 36)
    assert "DRAExtendedResource" in rules(SCHEDULER, 35) and "DRAExtendedResource" not in rules(SCHEDULER, 36)
    assert "DRA PostFilter" in rules(SCHEDULER, 36) and "invalid pools" not in rules(SCHEDULER, 35)
    assert "systemd quota" in rules(KUBELET, 34) and "systemd quota" not in rules(KUBELET, 35)
    assert "DRA in cgroups" in rules(KUBELET, 36)


def test_every_difference_cites_a_section_that_exists():
    sections = set(re.findall(r"^#+ (\d+(?:\.\d+)*)\.? ", DOC, re.M))
    for d in DIFFERENCES:
        assert d.section.startswith("docs/kubernetes/versions.md §"), d
        assert d.section.rsplit("§", 1)[1] in sections, d


def test_a_cluster_of_another_release_says_so_and_what_it_assumed():
    same = cluster_versions("v1.37.2", "GET /version", ["v1.37.2", "v1.37.1"])
    assert not same.differs() and same.kubelets == {"v1.37.1": 1, "v1.37.2": 1}
    assert same.assumed == ["kube-scheduler and kube-controller-manager run v1.37.2's minor (no API shows theirs; "
                            "the skew policy allows one minor older)"]
    older = cluster_versions("v1.34.4", "GET /version", ["v1.34.4", "v1.34.4", ""])  # "": a Node made by hand
    assert older.differs() and older.kubelets == {"v1.34.4": 2} and older.scheduler_minor() == 34
    assert older.not_known == []
    odd = cluster_versions("v1.37.2", "GET /version", ["v1.33.1", "v1.37.2"])
    assert odd.differs() and odd.not_known == ["kubelet v1.33.1: kubectl-dra models kubelets of 1.34 to 1.37; its "
                                               "cgroup values follow v1.37.2"]
    unknown = cluster_versions(None, "snapshot x: it has no marker (a hand-made snapshot)", [])
    assert not unknown.differs() and unknown.scheduler_minor() is None
    assert unknown.assumed == ["the API server's release is not known (snapshot x: it has no marker (a hand-made "
                               "snapshot)): rules of v1.37.2"]
    newer = cluster_versions("v1.38.0", "GET /version", [])
    assert newer.differs() and newer.not_known == [
        "API server v1.38.0: kubectl-dra models 1.34 to 1.37; what its scheduler and controllers do is not claimed"]


def test_note_records_only_the_rules_that_bear_on_the_answer_once():
    versions = cluster_versions("v1.34.4", "GET /version", [])
    note(versions, SCHEDULER, 34, {"NodeDeclaredFeatures"})
    note(versions, SCHEDULER, 34, {"NodeDeclaredFeatures"})
    assert versions.applied == ["kube-scheduler 1.34: NodeDeclaredFeatures is not in the default profile (its gate is "
                                "alpha, off) (docs/kubernetes/versions.md §4.1)"]
    note(versions, SCHEDULER, 34, {"claim owner"})  # not encoded: not claimed
    assert versions.not_known == ["kube-scheduler 1.34: a claim another pod owns is refused as \"... (pod is not "
                                  "owner)\" (docs/kubernetes/versions.md §4.3)"]


@pytest.mark.parametrize("release, first, declared", [(34, "NodeUnschedulable", False), (35, "NodeUnschedulable", False),
                                                      (36, "NodeUnschedulable", True), (37, "NodeName", True)])
def test_each_release_has_its_default_filter_order(release, first, declared):
    """default_plugins.go: NodeUnschedulable before NodeName until 1.36; NodeDeclaredFeatures from 1.36."""
    filters = default_filters(release)
    assert filters[0] == first and ("NodeDeclaredFeatures" in filters) is declared
    assert set(filters) - {"NodeDeclaredFeatures"} == set(DEFAULT_FILTERS) - {"NodeDeclaredFeatures"}
    profile = default_profile(release)
    assert profile.release == release and profile.filters == list(filters)
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    assert from_config(config, "default-scheduler", "s.yaml", release).filters == list(filters)


@pytest.mark.parametrize("release", [None, 33, 38])
def test_a_release_not_known_gets_1_37s_profile(release):
    assert default_profile(release).release == 37 and default_profile(release).filters == list(DEFAULT_FILTERS)


def test_the_skew_tier_builds_the_releases_it_runs():
    """scripts/build-skew and tests/k8s_build.py name the same releases (one of each older minor)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from k8s_build import SKEW_VERSIONS

    script = (Path(__file__).resolve().parents[2] / "scripts" / "build-skew").read_text()
    built = re.search(r"\$\{SKEW_VERSIONS:-([^}]*)\}", script).group(1).split()
    assert tuple(built) == SKEW_VERSIONS
    assert sorted(minor_of(v) for v in SKEW_VERSIONS) == [34, 35, 36]


def _answer(*reasons: str, error: str | None = None):
    from kubectl_dra.scheduling.document import NodeScheduling, Scheduling

    nodes = [NodeScheduling(node=f"n{i}", fits=False, plugin="DynamicResources", reasons=[r])
             for i, r in enumerate(reasons)]
    return Scheduling(message=f"0/{len(nodes)} nodes are available: {len(nodes)} {reasons[0]}.", nodes=nodes,
                      error=error)


@pytest.mark.parametrize("reason, release, claimed", [
    ("timed out trying to allocate devices", 35, False),  # an Unschedulable node there, an error from 1.36
    ("timed out trying to allocate devices", 36, True),
    ("invalid resource pools were encountered", 34, False), ("invalid resource pools were encountered", 35, True),
    ("ResourceClaim ns/c was not created for Pod ns/p (Pod is not owner)", 35, False),
    ("claim ns/c: selector #0 on device d: CEL runtime error: no such key: model", 36, False),
    ("cannot allocate all claims", 34, True),  # the same words in every release
])
def test_an_older_schedulers_words_not_encoded_are_not_claimed(reason, release, claimed):
    from kubectl_dra.scheduling.explain import _not_claimed

    answer = _answer(reason)
    message = answer.message
    _not_claimed(answer, release)
    assert (answer.message == message, answer.message_known) == (claimed, claimed)
    assert bool(answer.not_evaluated) is not claimed
    if not claimed:
        assert answer.not_evaluated[0].why.startswith(f"kube-scheduler 1.{release} differs here: ")


@pytest.mark.parametrize("claims, reasons, release, ends", [
    ([], ["Insufficient cpu"], 34, " no new claims to deallocate,"),
    (["c"], ["cannot allocate all claims"], 36, " still not schedulable,"),
    (["c"], ["cannot allocate all claims"], 37, ""),  # 1.37's PostFilter gives no reason
    (["c"], ["resourceclaim not available on the node"], 35, None),  # it could deallocate: not claimed
])
def test_the_older_postfilter_words(claims, reasons, release, ends):
    """dynamicresources.go PostFilter at v1.34.4-v1.36.3: its reason goes into FitError's message."""
    from kubectl_dra.model.inventory import Inventory
    from kubectl_dra.model.registry import parse_object
    from kubectl_dra.scheduling.explain import _post_filter_words

    pod = parse_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
                        "spec": {"containers": [{"name": "c"}],
                                 "resourceClaims": [{"name": n, "resourceClaimName": n} for n in claims]}})
    answer = _answer(*reasons)
    _post_filter_words(answer, pod, Inventory(), release)
    if ends is None:
        assert answer.message is None and not answer.message_known
    else:
        assert answer.message == f"0/1 nodes are available: 1 {reasons[0]}.{ends}"
