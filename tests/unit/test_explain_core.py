"""The decisions `explain` used to make in its click functions, now core functions that return data:
which allocation findings a pending claim gets from the pods that wait for it, what --node narrows in
a pending pod's scheduling, and how a --scheduler-config file becomes a profile."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kubectl_dra.allocation.document import Allocation, NodeAllocation
from kubectl_dra.allocation.explain import waiting_findings, wants_proposals
from kubectl_dra.document import Finding
from kubectl_dra.errors import InputError
from kubectl_dra.scheduling.profile import DEFAULT_FILTERS, ProfileError, from_documents

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster"
NOWHERE = Allocation(claims=["ml/c"], nodes_checked=2, nodes=[NodeAllocation(node="n1", feasible=False, message="m1"),
                                                               NodeAllocation(node="n2", feasible=False, message="m2")])


def waiting(*nominated: str | None) -> list:
    return [SimpleNamespace(status=SimpleNamespace(nominated_node_name=n)) for n in nominated]


@pytest.mark.parametrize("nominated, known, codes, on", [
    ((), [], [], None),  # no pod waits: nothing asks the scheduler to allocate it, so no verdict
    ((None,), [], ["Unsatisfiable"], None),
    ((None, None), [], ["Unsatisfiable"], None),  # once per code
    (("n1", None), [], ["Unsatisfiable", "UnsatisfiableOnNode"], "n1"),  # not nominated first, then by name
    (("n2", "n1"), [], ["UnsatisfiableOnNode", "Unsatisfiable"], "n1"),  # the first nominated node by name
    ((None,), [Finding(code="Unsatisfiable", severity="error", message="x")], [], None),  # already said
])
def test_a_pending_claim_gets_the_findings_of_the_nodes_its_pods_wait_for(nominated, known, codes, on):
    found = waiting_findings(NOWHERE, waiting(*nominated), known)
    assert [f.code for f in found] == codes
    assert [f.message.split(" cannot")[0] for f in found if f.code == "UnsatisfiableOnNode"] == \
        ([f"nominated node {on}"] if on else [])


@pytest.mark.parametrize("feasible, only_node, wanted", [
    ([], None, True), (["n1"], None, False), ([], "n1", False)])
def test_proposals_answer_no_node_fits_and_never_one_named_node(feasible, only_node, wanted):
    assert wants_proposals(Allocation(feasible_nodes=feasible), only_node) is wanted


CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@pytest.mark.parametrize("documents, error", [
    ([], "s.yaml: expected one KubeSchedulerConfiguration document, found 0"),
    ([None, None], "s.yaml: expected one KubeSchedulerConfiguration document, found 0"),  # empty documents
    ([CONFIG, CONFIG], "s.yaml: expected one KubeSchedulerConfiguration document, found 2"),
    ([{"kind": "Pod"}], "s.yaml: not a KubeSchedulerConfiguration (kind is 'Pod')"),
    ([None, CONFIG], None),
])
def test_a_scheduler_config_file_is_one_configuration(documents, error):
    if error is None:
        profile = from_documents(documents, "default-scheduler", "s.yaml")
        assert (profile.source, profile.filters) == ("profile default-scheduler of s.yaml", list(DEFAULT_FILTERS))
        return
    with pytest.raises(ProfileError) as raised:
        from_documents(documents, "default-scheduler", "s.yaml")
    assert str(raised.value) == error
    assert isinstance(raised.value, InputError)  # a file that cannot be understood: one line, exit 3


def test_node_narrows_the_nodes_shown_not_the_unschedulable_finding(dra):
    """The finding is the scheduler's message over every node, with or without --node."""
    def run(*flags):
        result = dra("explain", "pod", "feature-store", "-n", "ml", "--snapshot", str(EXAMPLE), "-o", "json",
                     *flags)
        assert result.exit_code == 0, result
        doc = result.json()
        return [n["node"] for n in doc["scheduling"]["nodes"]], \
            [f["message"] for f in doc["findings"] if f["code"] == "Unschedulable"]

    every, whole = run()
    one, narrowed = run("--node", "worker-gpu-2")
    assert (len(every), one) == (3, ["worker-gpu-2"])
    assert narrowed == whole and len(whole) == 1 and "0/3 nodes are available" in whole[0]
