"""The systemd boot (boots.py): ``systemd_node``, booted with the matrix's pods Running for this
package's tests and stopped after them."""

from __future__ import annotations

import pytest
from boots import SYSTEMD, SYSTEMD_KUBELET, boot, stop
from realnode import ContainerdSettings


@pytest.fixture(scope="package")
def systemd_node(node_plane, tmp_path_factory):
    booted = boot(node_plane, tmp_path_factory.mktemp("nodes"), SYSTEMD, mode="systemd", kubelet=SYSTEMD_KUBELET,
                  containerd=ContainerdSettings(systemd_cgroup=True, hugetlb_controller=True))
    yield booted
    stop(booted.node)
