"""The agent image as scripts/build-image makes it: the same inputs give the same digest, it holds
what the agent loads and nothing a node does not need (no shell, no package manager, no compiler,
none of the CLI's engines), its byte code is valid on a read-only root, and registry tools take the
OCI archive as it is.

Needs root and Debian's archive (mmdebstrap) and PyPI, as scripts/build-image does; skipped
without root unless KUBECTL_DRA_REQUIRE_NODE=1 (CI), which makes that a failure. Two builds:
about 70 s on two cores.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kubectl_dra import __version__

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import image_contents  # noqa: E402

REQUIRED = os.environ.get("KUBECTL_DRA_REQUIRE_NODE") == "1"
SITE = "usr/local/lib/python3.11/dist-packages/"
MIB = 1 << 20


def build(out: Path) -> Path:
    done = subprocess.run([str(ROOT / "scripts" / "build-image"), str(out)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    if os.geteuid() != 0:
        if REQUIRED:
            pytest.fail("KUBECTL_DRA_REQUIRE_NODE=1 but scripts/build-image needs root")
        pytest.skip("scripts/build-image needs root (mmdebstrap --mode=root)")
    where = tmp_path_factory.mktemp("images")
    return build(where / "first.tar"), build(where / "second.tar")


def blobs(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def layer(archive: Path) -> tarfile.TarFile:
    files = blobs(archive)
    index = json.loads(files["index.json"])
    manifest = json.loads(files["blobs/sha256/" + index["manifests"][0]["digest"].split(":")[1]])
    (only,) = manifest["layers"]
    return tarfile.open(fileobj=io.BytesIO(files["blobs/sha256/" + only["digest"].split(":")[1]]))


def test_the_same_inputs_give_the_same_digest(images):
    first, second = images
    assert first.read_bytes() == second.read_bytes()  # every byte, so the digest too
    files = blobs(first)
    digest = json.loads(files["index.json"])["manifests"][0]["digest"]
    assert digest == "sha256:" + hashlib.sha256(files["blobs/sha256/" + digest.split(":")[1]]).hexdigest()


def test_it_holds_what_the_agent_loads_and_nothing_else(images):
    names = {m.name for m in layer(images[0]).getmembers()}
    assert "usr/local/bin/dra-node-agent" in names and "usr/bin/python3.11" in names
    for absent in ("bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/dash", "usr/bin/apt-get", "usr/bin/dpkg",
                   "usr/bin/gcc", SITE + "pip", SITE + "cel_expr_python", SITE + "msgspec", SITE + "aiohttp",
                   SITE + "kubernetes/aio", SITE + "kubernetes/client/models/v1_pod.py",
                   SITE + "kubectl_dra/allocation/allocator.py", SITE + "kubectl_dra/cli/claims.py"):
        assert absent not in names, absent
    # the lazy maps of the client's generated packages stay: ApiClient imports them
    assert {SITE + "kubernetes/client/models/__init__.py", SITE + "kubernetes/client/api/__init__.py"} <= names
    ours, _ = image_contents.agent_modules()
    carried = {n[len(SITE):-3].replace("/", ".").removesuffix(".__init__") for n in names
               if n.startswith((SITE + "kubectl_dra/", SITE + "node_agent/")) and n.endswith(".py")}
    assert carried == ours  # exactly the project's modules the agent can import
    distributions = {n[len(SITE):].split("-")[0].lower().replace("_", "-")
                     for n in names if n.startswith(SITE) and n.endswith(".dist-info")}
    assert distributions == set(image_contents.pins()) | {"kubectl-dra"}


def test_it_is_small(images):
    """The agent needs Python, gRPC, libcurl and a few libraries: under 125 MiB, where it was 222
    MiB. pycurl's wheel (libcurl, its own OpenSSL and nghttp2, for the one HTTP/2 connection)
    took it from 108 to 119 MiB."""
    size = images[0].stat().st_size
    assert size < 125 * MIB, f"{size / MIB:.0f} MiB"


def test_every_module_has_byte_code_valid_without_its_timestamp(images):
    """The root filesystem is read-only, so nothing can be compiled at run time: each .py has an
    unchecked-hash .pyc beside it (PEP 552 flags 0b01: valid whatever the file's mtime, no source
    hash computed at import)."""
    tar = layer(images[0])
    members = {m.name: m for m in tar.getmembers()}
    sources = [n for n in members if n.endswith(".py") and n.startswith((SITE, "usr/lib/python3.11/"))]
    assert len(sources) > 500
    for name in sources:
        directory, _, file = name.rpartition("/")
        pyc = f"{directory}/__pycache__/{file[:-3]}.cpython-311.pyc"
        assert pyc in members, pyc
    for name in sources[::50]:
        directory, _, file = name.rpartition("/")
        header = tar.extractfile(members[f"{directory}/__pycache__/{file[:-3]}.cpython-311.pyc"]).read(16)
        assert int.from_bytes(header[4:8], "little") == 0b01, name


def test_registry_tools_take_the_archive_as_it_is(images):
    """skopeo (what a user pushes it to a registry with) reads the OCI archive and finds the digest
    containerd will show."""
    skopeo = shutil.which("skopeo")
    if skopeo is None:
        if REQUIRED:
            pytest.fail("KUBECTL_DRA_REQUIRE_NODE=1 but skopeo is missing (scripts/build-node installs it)")
        pytest.skip("skopeo is not installed (scripts/build-node installs it)")
    done = subprocess.run([skopeo, "inspect", f"oci-archive:{images[0]}"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["Digest"] == json.loads(blobs(images[0])["index.json"])["manifests"][0]["digest"]
    assert seen["Architecture"] == "amd64" and "PYTHONUNBUFFERED=1" in seen["Env"]
    assert __version__ in json.loads(blobs(images[0])["index.json"])["manifests"][0]["annotations"][
        "io.containerd.image.name"]
