"""CDI IDs resolved as the runtime's CDI cache resolves them (cncf-tags/container-device-interface
pkg/cdi/cache.go refresh and spec-dirs.go): by kind and device name, later directory wins,
same-directory duplicates dropped for good, broken files skipped."""

from __future__ import annotations

import json

import pytest

from kubectl_dra.nodestate.cdi import SpecError, build_index, parse_spec

DIRS = ("/etc/cdi", "/var/run/cdi")


def spec(kind: str, *names: str) -> str:
    return json.dumps({"cdiVersion": "0.8.0", "kind": kind, "devices": [{"name": n} for n in names]})


@pytest.mark.parametrize("files, qualified, resolves_to", [
    # file names play no part: only kind and device name
    ([(1, "/var/run/cdi/whatever.json", spec("dra.k8s.io/cpu", "claim-1"))], "dra.k8s.io/cpu=claim-1",
     "/var/run/cdi/whatever.json"),
    # the later directory has the higher priority
    ([(0, "/etc/cdi/a.json", spec("example.com/gpu", "gpu-0")), (1, "/var/run/cdi/b.json", spec("example.com/gpu", "gpu-0"))],
     "example.com/gpu=gpu-0", "/var/run/cdi/b.json"),
    ([(1, "/var/run/cdi/b.yaml", "cdiVersion: 0.6.0\nkind: example.com/gpu\ndevices:\n- name: gpu-0\n")],
     "example.com/gpu=gpu-0", "/var/run/cdi/b.yaml"),
    # same directory twice: dropped, and a later directory does not bring it back
    ([(0, "/etc/cdi/a.json", spec("example.com/gpu", "gpu-0")), (0, "/etc/cdi/b.json", spec("example.com/gpu", "gpu-0"))],
     "example.com/gpu=gpu-0", None),
    ([(0, "/etc/cdi/a.json", spec("example.com/gpu", "gpu-0")), (0, "/etc/cdi/b.json", spec("example.com/gpu", "gpu-0")),
      (1, "/var/run/cdi/c.json", spec("example.com/gpu", "gpu-0"))], "example.com/gpu=gpu-0", None),
    ([(0, "/etc/cdi/a.json", spec("example.com/gpu", "gpu-0"))], "example.com/gpu=gpu-1", None),
    ([(0, "/etc/cdi/a.json", spec("example.com/gpu", "gpu-0"))], "example.com/nic=gpu-0", None),
])
def test_resolution(files, qualified, resolves_to):
    index = build_index(DIRS, files)
    assert index.devices.get(qualified) == resolves_to
    assert (index.why_unresolved(qualified) is None) == (resolves_to is not None)


def test_reasons_name_the_cause():
    index = build_index(DIRS, [(0, "/etc/cdi/a.json", spec("example.com/gpu", "gpu-0")),
                               (0, "/etc/cdi/b.json", spec("example.com/gpu", "gpu-0")),
                               (1, "/var/run/cdi/broken.json", "{not json")])
    assert "defined twice at the same priority (/etc/cdi/a.json, /etc/cdi/b.json)" in index.why_unresolved(
        "example.com/gpu=gpu-0")
    missing = index.why_unresolved("example.com/gpu=gpu-7")
    assert "no spec in /etc/cdi, /var/run/cdi defines a example.com/gpu device" in missing
    assert "/var/run/cdi/broken.json" in missing
    assert "not a fully qualified" in index.why_unresolved("gpu-7")


@pytest.mark.parametrize("text, message", [
    ("{", "not YAML or JSON"),
    ("[]", "not a CDI spec"),
    (json.dumps({"kind": "example.com/gpu", "devices": [{"name": "a"}]}), "no cdiVersion"),
    (json.dumps({"cdiVersion": "0.8.0", "kind": "gpu", "devices": [{"name": "a"}]}), "invalid kind"),
    (json.dumps({"cdiVersion": "0.8.0", "kind": "example.com/gpu", "devices": []}), "no devices"),
    (json.dumps({"cdiVersion": "0.8.0", "kind": "example.com/gpu", "devices": [{}]}), "without a name"),
])
def test_broken_specs_are_skipped_with_the_reason(text, message):
    with pytest.raises(SpecError, match=message):
        parse_spec(text)
    index = build_index(DIRS, [(0, "/etc/cdi/x.json", text)])
    assert message in index.errors["/etc/cdi/x.json"] and not index.devices
