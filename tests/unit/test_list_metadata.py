"""Where a watch starts: a list page's resourceVersion (and continue token), read from the head the
API server writes first, or from the whole page when it is shaped otherwise."""

from __future__ import annotations

import pytest

from kubectl_dra.errors import InputError
from kubectl_dra.model.registry import list_continue, list_resource_version


@pytest.mark.parametrize("page, version, token", [
    (b'{"kind":"ResourceClaimList","apiVersion":"resource.k8s.io/v1","metadata":{"resourceVersion":"4711",'
     b'"continue":"abc"},"items":[]}', "4711", "abc"),
    (b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12"},"items":[]}', "12", None),
    # another order of keys: the whole page is read
    (b'{"items":[],"metadata":{"continue":"t","resourceVersion":"99"},"kind":"PodList"}', "99", "t"),
    (b'{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}', None, None),
    (b'{"items":[]}', None, None),
])
def test_list_metadata(page, version, token):
    assert list_resource_version(page) == version
    assert list_continue(page) == token


def test_a_page_that_is_no_object_is_an_error():
    with pytest.raises(InputError):
        list_resource_version(b"[1, 2]")
