"""Where scripts/build-control-plane puts the Kubernetes v1.37.2 binaries, and which kubectl the
tests use: the built 1.37.2 one when it is there (plugin discovery and kustomize are tested on
1.37), else one on PATH; with KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 (CI) only the built one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

K8S_VERSION = "v1.37.2"
KARPENTER_VERSION = "v1.14.1"
CACHE = Path(os.environ.get("KUBECTL_DRA_CACHE", Path.home() / ".cache" / "kubectl-dra")) / f"k8s-{K8S_VERSION}"
BIN = CACHE / "bin"
REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_CONTROL_PLANE") == "1"


def kubectl_path() -> str | None:
    built = BIN / "kubectl"
    if built.is_file():
        return str(built)
    return None if REQUIRED else shutil.which("kubectl")
