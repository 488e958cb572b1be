"""The version has one source, ``kubectl_dra.__version__`` (pyproject.toml reads it; so do the CLIs,
the agent's ``dra_agent_info`` metric, snapshot markers and scripts/build-image). Files that cannot
import it (the DaemonSet's image tag and labels, the README, a rendered krew manifest) write it
out: every such mention in the repository's files must equal it, so a release that bumps
``__version__`` and forgets one of them fails here. CHANGELOG.md names every release on purpose."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from kubectl_dra import __version__

ROOT = Path(__file__).resolve().parents[2]
V = r"v?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.]*[0-9A-Za-z])?)"
# where this project's own version is written out: image name and tag, the image tarball, the
# Kubernetes version label, "kubectl-dra X" (version command, snapshot marker createdBy) and
# "dra-node-agent, version X" (--version); each names the project, so other programs' versions
# (the example's driver images, CDI specs, Kubernetes itself) never match
PATTERNS = [
    re.compile(r"kubectl-dra-node-agent:" + V),
    re.compile(r"dra-node-agent-" + V + r"\.tar"),
    re.compile(r"kubectl_dra-" + V + r"(?:-py3-none-any\.whl|\.tar\.gz)"),
    re.compile(r"app\.kubernetes\.io/version:\s*[\"']?" + V),
    re.compile(r"(?<![\w-])kubectl-dra,? (?:version )?" + V),
    re.compile(r"(?<![\w-])dra-node-agent, version " + V),
]


def mentions(text: str) -> list[tuple[int, str]]:
    """(line number, version) for every mention of this project's version in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in PATTERNS:
            found += [(number, m.group(1)) for m in pattern.finditer(line)]
    return found


def repository_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    this = Path(__file__).resolve()  # its table holds other versions on purpose
    history = ROOT / "CHANGELOG.md"  # every release's version, on purpose (test_releases.py checks it)
    return [ROOT / name for name in listed if name and (ROOT / name).is_file()
            and (ROOT / name).resolve() not in (this, history)]


def all_mentions() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in repository_files():
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if found := mentions(text):
            out[str(path.relative_to(ROOT))] = found
    return out


@pytest.mark.parametrize("text,expected", [
    ("image: kubectl-dra-node-agent:0.2.0   # comment", ["0.2.0"]),
    ("podman build -t <registry>/kubectl-dra-node-agent:1.0.0-rc.1 .", ["1.0.0-rc.1"]),
    ("scripts/build-image   # ~/.cache/kubectl-dra/image/dra-node-agent-0.1.1.tar", ["0.1.1"]),
    ('    app.kubernetes.io/version: "0.3.0"', ["0.3.0"]),
    ("app.kubernetes.io/version: v0.3.0", ["0.3.0"]),
    ("createdBy: kubectl-dra 0.4.0", ["0.4.0"]),
    ("$ kubectl dra version\nkubectl-dra 0.5.0", ["0.5.0"]),
    ("dra-node-agent, version 0.6.0", ["0.6.0"]),
    ("pipx install dist/kubectl_dra-0.7.0-py3-none-any.whl", ["0.7.0"]),
    ("DIST: kubectl_dra-0.7.1.tar.gz and", ["0.7.1"]),
    ("pipx install --force dist/kubectl_dra-<new>-py3-none-any.whl", []),
    # other programs' versions are not ours
    ("image: registry.k8s.io/dra-example-driver/dra-example-driver:v0.4.0", []),
    ('"cdiVersion": "0.8.0"', []),
    ("kubectl-dra-system 10.0.0.1", []),
    ("a real Kubernetes **v1.37.2** control plane", []),
])
def test_a_mention_of_our_version_is_found_and_nothing_else(text, expected):
    assert [v for _, v in mentions(text)] == expected


def test_every_version_written_in_the_repository_is_kubectl_dra_version():
    wrong = [f"{path}:{line}: {found}" for path, found_list in all_mentions().items()
             for line, found in found_list if found != __version__]
    assert not wrong, f"kubectl_dra.__version__ is {__version__}, but:\n" + "\n".join(wrong)


def test_the_places_that_cannot_import_the_version_are_checked():
    """The scan is not vacuous: it sees the DaemonSet's tag and both labels and the README's image
    name, image tarball, wheel and sdist."""
    found = all_mentions()
    assert len(found.get("manifests/agent/daemonset.yaml", [])) == 3
    assert len(found.get("README.md", [])) >= 8


def test_the_daemonset_runs_this_version_of_the_image():
    docs = list(yaml.safe_load_all((ROOT / "manifests" / "agent" / "daemonset.yaml").read_text()))
    daemonset = next(d for d in docs if d and d.get("kind") == "DaemonSet")
    images = [c["image"] for c in daemonset["spec"]["template"]["spec"]["containers"]]
    assert images == [f"kubectl-dra-node-agent:{__version__}"]


def test_a_rendered_krew_manifest_carries_this_version():
    """.krew.yaml is a template (its version is filled in when an archive is made); once rendered,
    or wherever a literal version is written, it is this one."""
    text = (ROOT / ".krew.yaml").read_text()
    version = re.search(r"^\s+version:\s*\"?([^\"\n]+)", text, re.M).group(1).strip()
    assert "{{" in version or version.lstrip("v") == __version__, version


@pytest.mark.parametrize("script", ["scripts/build-image", "scripts/release"])
def test_the_scripts_read_the_version_from_the_package(script):
    """They parse kubectl_dra/__init__.py with sed; the expression must still find the version."""
    line = next(line for line in (ROOT / script).read_text().splitlines() if line.startswith("VERSION="))
    expression = re.search(r"sed -n '([^']+)'", line).group(1)
    out = subprocess.run(["sed", "-n", expression, str(ROOT / "kubectl_dra" / "__init__.py")],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == __version__
