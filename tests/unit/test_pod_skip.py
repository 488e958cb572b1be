"""Lists that keep only pods using claims skip the others without building them: the skip view
must accept exactly the valid pods ``Pod.uses_claims`` drops, and reject every malformed one (so
it is validated in full and its problem named)."""

from __future__ import annotations

import json

import pytest
from builders import pod
from pydantic import ValidationError

from kubectl_dra.model.base import adapter
from kubectl_dra.model.pod import Pod, PodWithoutClaims
from kubectl_dra.model.registry import parse_object, parse_page


def shaped(spec: dict | None = None, status: dict | None = None, drop_spec: bool = False) -> dict:
    raw = pod("p", claims={})
    raw["spec"].update(spec or {})
    raw["status"].update(status or {})
    if drop_spec:
        del raw["spec"]
    return raw


VALID = [
    ("no claims", shaped()),
    ("empty resourceClaims", shaped({"resourceClaims": []})),
    ("a claim", shaped({"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]})),
    ("a template claim", shaped({"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]})),
    ("a PodGroup member", shaped({"schedulingGroup": {"podGroupName": "g"}})),
    ("schedulingGroup null", shaped({"schedulingGroup": None})),
    ("an extended-resource claim", shaped(status={"extendedResourceClaimStatus": {
        "resourceClaimName": "p-extended-resources-x", "requestMappings": []}})),
    ("extendedResourceClaimStatus null", shaped(status={"extendedResourceClaimStatus": None})),
    ("no spec at all", shaped(drop_spec=True)),
]


def skipped(raw: dict) -> bool:
    try:
        adapter(PodWithoutClaims).validate_python(raw)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("name,raw", VALID, ids=[v[0] for v in VALID])
def test_the_skip_view_accepts_exactly_the_pods_uses_claims_drops(name, raw):
    parsed = parse_object(raw)
    assert not parsed.invalid_fields
    assert skipped(raw) is (not parsed.uses_claims())


@pytest.mark.parametrize("spec", [{"resourceClaims": "gpu"}, {"resourceClaims": None}, {"resourceClaims": [7]},
                                  {"schedulingGroup": "g"}, {"schedulingGroup": {}}])
def test_a_malformed_claim_field_is_never_skipped(spec):
    assert not skipped(shaped(spec))


def test_a_page_keeps_the_claim_users_in_order_and_never_builds_the_others():
    items = [pod("a"), pod("b", claims={"gpu": "c1"}), pod("c", group="g"), pod("d"), pod("e", claims={"x": "c2"})]
    page = json.dumps({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}).encode()
    kept = parse_page(Pod, page, "v1", PodWithoutClaims)
    assert [p.name for p in kept] == ["b", "c", "e"]
    assert all(isinstance(p, Pod) for p in kept)
    assert [p.name for p in parse_page(Pod, page, "v1") if p.uses_claims()] == ["b", "c", "e"]
    # a claim user with a bad field still sends the page to the tolerant path (its problem is named)
    items[1]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "lots"}
    page = json.dumps({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}).encode()
    assert parse_page(Pod, page, "v1", PodWithoutClaims) is None
