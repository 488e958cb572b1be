"""Where scripts/build-control-plane puts the Kubernetes v1.37.2 binaries, and which kubectl the
tests use: the built 1.37.2 one when it is there (plugin discovery and kustomize are tested on
1.37), else one on PATH; with KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 (CI) only the built one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

K8S_VERSION = "v1.37.2"
KARPENTER_VERSION = "v1.14.1"
ROOT = Path(os.environ.get("KUBECTL_DRA_CACHE", Path.home() / ".cache" / "kubectl-dra"))
CACHE = ROOT / f"k8s-{K8S_VERSION}"
BIN = CACHE / "bin"
# the older minors the skew tier runs against (tests/skew): scripts/build-skew builds their
# kube-apiserver and kube-scheduler; keep the two lists equal
SKEW_VERSIONS = ("v1.34.4", "v1.35.4", "v1.36.3")
REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_CONTROL_PLANE") == "1"


def bin_of(version: str) -> Path:
    """Where scripts/build-control-plane puts one release's binaries."""
    return ROOT / f"k8s-{version}" / "bin"


def kubectl_path() -> str | None:
    built = BIN / "kubectl"
    if built.is_file():
        return str(built)
    return None if REQUIRED else shutil.which("kubectl")
