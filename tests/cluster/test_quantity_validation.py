"""Our reading of nonsense quantities against the v1.37.2 API server's: every value it rejects we
treat as invalid with its words; the magnitudes it stores but nothing can count (Value() overflows
int64) we treat as invalid too, and this test records that the server accepts them."""

from __future__ import annotations

import json
import sys
import urllib.error
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_model import QUANTITY_CASES, pod_with  # noqa: E402

from controlplane import started  # noqa: E402

from kubectl_dra.model.registry import parse_object  # noqa: E402


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    """Its own API server: the pods written here must not show up in other tests' clusters."""
    p = started(tmp_path_factory.mktemp("quantities"))
    yield p
    p.stop()


@pytest.mark.parametrize("index", range(len(QUANTITY_CASES)))
def test_the_api_server_agrees(plane, index):
    resources, invalid = QUANTITY_CASES[index]
    body = pod_with(resources)
    body["metadata"] = {"name": f"quantity-{index}", "namespace": "default"}
    body["spec"]["containers"][0]["image"] = "registry.example/app:1"
    try:
        stored = plane.request("POST", "/api/v1/namespaces/default/pods", body)
        message = None
    except urllib.error.HTTPError as exc:
        message = json.loads(exc.read())["message"]
    overflow = [r for r in invalid.values() if "overflows" in r]
    if message is None:
        assert set(invalid.values()) == set(overflow), f"the server accepted what we call invalid: {invalid}"
        ours = parse_object(stored)  # what a live read gives us
        assert {f.reason for f in ours.invalid_fields} == set(overflow)
    else:
        assert invalid and not overflow, f"the server rejected what we accept: {message}"
        for reason in invalid.values():
            assert reason in message, (reason, message)
