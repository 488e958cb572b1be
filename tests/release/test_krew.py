"""krew, for real: the archive scripts/krew-archive builds, its manifest through krew's own
validator, installed by the real krew (scripts/build-krew, from sigs.k8s.io/krew) into a temporary
KREW_ROOT, then run through the real kubectl from an environment with no project venv, no
PYTHONPATH and no VIRTUAL_ENV, exactly as a krew user's shell would run it.

Cost: the archive is cached by a hash of its inputs (a no-op when kubectl_dra/, node_agent/,
pyproject.toml and the scripts are unchanged); a first build on two cores takes about 75 s (the
PyInstaller build venv ~25 s, the freeze and the tar.gz ~50 s), krew ~25 s; warm, this module
takes ~10 s.
Without Go (krew cannot be built) or kubectl it is skipped with one reason, unless
KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 (CI), which makes that a failure.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from k8s_build import kubectl_path

from kubectl_dra import __version__
from kubectl_dra.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster"
CACHE = Path(os.environ.get("KUBECTL_DRA_CACHE", Path.home() / ".cache" / "kubectl-dra"))
KREW_BIN = CACHE / "krew-v0.4.3" / "bin"
REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_CONTROL_PLANE") == "1"
ARCHIVE = f"kubectl-dra_v{__version__}_linux_amd64.tar.gz"


def unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(dist dir, kubectl): krew and its validator built, the archive and dra.yaml rendered."""
    kubectl = kubectl_path()
    if kubectl is None:
        unavailable("no kubectl (scripts/build-control-plane builds it)")
    krew = subprocess.run([str(ROOT / "scripts" / "build-krew")], capture_output=True, text=True, timeout=1200)
    if krew.returncode != 0:
        unavailable(f"scripts/build-krew failed: {(krew.stderr.strip().splitlines() or ['no output'])[-1]}")
    dist = tmp_path_factory.mktemp("dist")
    archive = subprocess.run([str(ROOT / "scripts" / "krew-archive"), str(dist)], capture_output=True, text=True,
                             timeout=1800)
    assert archive.returncode == 0, archive.stderr  # a broken archive build is a failure, never a skip
    return dist, kubectl


@pytest.fixture(scope="module")
def manifest(built):
    return yaml.safe_load((built[0] / "dra.yaml").read_text())


def test_manifest_passes_krews_validator(built):
    dist, _ = built
    # -skip-install: the validator's own install step downloads the release URI; the install from
    # the local archive is done by krew itself below
    result = subprocess.run([str(KREW_BIN / "validate-krew-manifest"), "-manifest", str(dist / "dra.yaml"),
                             "-skip-install"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "structural validation OK" in result.stderr


def test_manifest_points_at_this_archive(built, manifest):
    dist, _ = built
    (platform,) = manifest["spec"]["platforms"]
    assert manifest["spec"]["version"] == f"v{__version__}"
    assert platform["sha256"] == hashlib.sha256((dist / ARCHIVE).read_bytes()).hexdigest()
    assert platform["uri"].endswith(f"/v{__version__}/{ARCHIVE}")
    assert platform["selector"] == {"matchLabels": {"os": "linux", "arch": "amd64"}}
    # the one source: description and caveats come from .krew.yaml as written
    template = yaml.safe_load(re.sub(r"\{\{.*\}\}", "", (ROOT / ".krew.yaml").read_text()))
    assert manifest["spec"]["description"] == template["spec"]["description"]
    assert manifest["spec"]["caveats"] == template["spec"]["caveats"]


def test_archive_is_self_contained(built):
    """LICENSE, an ELF executable with its own interpreter, no link krew could not extract."""
    dist, _ = built
    with tarfile.open(dist / ARCHIVE) as tar:
        members = {m.name: m for m in tar.getmembers()}
        head = tar.extractfile(members["kubectl-dra"]).read(4)
    assert {"LICENSE", "kubectl-dra", "_internal"} <= set(members)
    assert members["kubectl-dra"].mode & 0o111 and head == b"\x7fELF"
    assert any(re.fullmatch(r"_internal/libpython3\.\d+\.so[.\d]*", name) for name in members)
    assert all(m.isfile() or m.isdir() for m in members.values())


def completion_link_command(manifest) -> str:
    """The one line the caveats tell a krew user to run for `kubectl dra <TAB>` (README: ### krew)."""
    (line,) = [ln.strip() for ln in manifest["spec"]["caveats"].splitlines() if ln.strip().startswith("ln ")]
    return line


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """KREW_ROOT after `kubectl krew install --manifest --archive`, and the environment of a user
    whose PATH has krew's bin and kubectl, and no Python project anywhere."""
    dist, kubectl = built
    krew_root = tmp_path_factory.mktemp("krew-root")
    env = {"HOME": str(krew_root / "home"), "KREW_ROOT": str(krew_root), "KREW_NO_UPGRADE_CHECK": "1",
           "NO_COLOR": "1", "PATH": os.pathsep.join([str(krew_root / "bin"), str(Path(kubectl).parent),
                                                     "/usr/bin", "/bin"])}
    install = subprocess.run([kubectl, "krew", "install", f"--manifest={dist / 'dra.yaml'}",
                              f"--archive={dist / ARCHIVE}"], capture_output=True, text=True, timeout=120,
                             env={**env, "PATH": f"{KREW_BIN}{os.pathsep}{env['PATH']}"}, stdin=subprocess.DEVNULL)
    assert install.returncode == 0, install.stderr
    assert "Installed plugin: dra" in install.stderr
    assert (krew_root / "store" / "dra" / f"v{__version__}" / "LICENSE").is_file()
    assert (krew_root / "bin" / "kubectl-dra").is_symlink()
    return krew_root, env, kubectl


def user(installed, *args: str) -> subprocess.CompletedProcess:
    _, env, kubectl = installed
    return subprocess.run([kubectl, *args], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)


def pip_cli(*args: str) -> subprocess.CompletedProcess:
    """The same command from this checkout's Python (the pip-installed CLI's code)."""
    code = "import sys; sys.argv[0] = 'kubectl-dra'; from kubectl_dra.cli import main; main()"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    env.pop("KUBECONFIG", None)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=ROOT)


SNAP = ["--snapshot", "examples/cluster"]


@pytest.mark.parametrize("args", [
    ["claims", "-A", *SNAP],
    ["claims", "-A", "-o", "json", *SNAP],
    # an unbound pod: every scheduler filter, imported lazily by name (scheduling/profile.py), and CEL
    ["explain", "pod", "eval-replay", "-n", "default", *SNAP],
    ["overlays", *SNAP],
    ["taints", "--dry-run", "-f", "examples/taint-rules/drain-worker-gpu-2.yaml", *SNAP],
    # the node scan's cgroup reader (kubectl_dra/nodescan/), which `verify --cgroup-root` runs
    ["verify", "--cgroup-root", "/nonexistent", "--node", "worker-gpu-1", *SNAP],
    ["version"],
], ids=lambda args: " ".join(args[:2]))
def test_kubectl_runs_the_krew_installed_plugin(installed, args):
    frozen, source = user(installed, "dra", *args), pip_cli(*args)
    assert (frozen.returncode, frozen.stdout, frozen.stderr) == (source.returncode, source.stdout, source.stderr)
    assert frozen.stdout or frozen.stderr


def test_completion_through_kubectl_after_the_caveats_step(installed):
    krew_root, env, _ = installed
    link = krew_root / "bin" / "kubectl_complete-dra"
    link.unlink(missing_ok=True)
    before = user(installed, "__complete", "dra", "")
    assert not any(line.startswith("claims\t") for line in before.stdout.splitlines())  # krew links only bin
    step = subprocess.run(["/bin/sh", "-c", completion_link_command(yaml.safe_load(
        (krew_root / "receipts" / "dra.yaml").read_text()))], env=env, capture_output=True, text=True, timeout=30)
    assert step.returncode == 0, step.stderr
    lines = user(installed, "__complete", "dra", "").stdout.splitlines()
    assert [line.split("\t")[0] for line in lines[:-1]] == sorted(COMMANDS)
    assert lines[-1] == ":4"
    assert user(installed, "__complete", "dra", "explain", "cl").stdout.splitlines()[0].startswith("claim\t")
    # object names from the snapshot the typed flags select, read by the frozen build
    names = user(installed, "__complete", "dra", "explain", "claim", "--snapshot", str(EXAMPLE), "-n", "ml", "")
    assert "batch-embed-gpus" in [line.split("\t")[0] for line in names.stdout.splitlines()]
