"""The Python packages as a user gets them: scripts/release builds the sdist and the wheel (python -m
build, twine check --strict), the wheel installs into a clean venv and with pipx, the sdist builds
and installs too, and the installed commands run from outside the checkout (a temporary cwd, no
PYTHONPATH), so nothing can come from the repository by accident.

Slow (about 65 s warm on two cores, pip's cache filled; the first run downloads the dependencies
from PyPI): -m "not slow" leaves it out of a quick loop; scripts/test runs it. It never skips: without
PyPI it fails."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from kubectl_dra import __version__

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("KUBECTL_DRA_CACHE", Path.home() / ".cache" / "kubectl-dra"))
TOOLS = CACHE / "release-tools"  # scripts/release's build/twine venv
WHEEL = f"kubectl_dra-{__version__}-py3-none-any.whl"
SDIST = f"kubectl_dra-{__version__}.tar.gz"
COMMANDS = ("kubectl-dra", "kubectl_complete-dra", "dra-node-agent")
# pip's byte-compiling of the kubernetes client is most of an install's time, and not what is tested
NO_COMPILE = ("--no-compile",)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that points at the checkout or its venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "KUBECONFIG")}
    dev_bins = {str(ROOT / ".venv" / "bin"), str(Path(sys.executable).parent)}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p not in dev_bins)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def run(args, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=env or clean_env(), capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, \
        f"{args} exited {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="session")
def packages(tmp_path_factory) -> Path:
    """scripts/release's sdist and wheel, built once (the krew archive is left to its own test)."""
    dist = tmp_path_factory.mktemp("dist")
    run(["bash", ROOT / "scripts" / "release", "--no-krew", "--no-image", dist], cwd=ROOT, env=clean_env())
    assert sorted(p.name for p in dist.iterdir()) == sorted([SDIST, WHEEL])
    return dist


def venv_with(tmp: Path, name: str, package: Path) -> Path:
    """A new venv (no system site-packages) with ``package`` installed by pip; its bin directory."""
    venv = tmp / name
    run([sys.executable, "-m", "venv", venv], cwd=tmp)
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", *NO_COMPILE, package], cwd=tmp)
    return venv / "bin"


def check_commands(bin_dir: Path, cwd: Path) -> None:
    """Each installed command runs from ``cwd`` and is this version."""
    version = run([bin_dir / "kubectl-dra", "version"], cwd)
    assert version.stdout.strip() == f"kubectl-dra {__version__}"
    claims = run([bin_dir / "kubectl-dra", "claims", "-A", "--snapshot", ROOT / "examples" / "cluster"], cwd)
    lines = claims.stdout.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"] and len(lines) > 5, claims.stdout
    completion = run([bin_dir / "kubectl_complete-dra", "__complete", ""], cwd)
    candidates = completion.stdout.splitlines()
    assert candidates[-1] == ":4"  # cobra's ShellCompDirectiveNoFileComp
    assert {"claims", "explain", "verify", "version"} <= {line.split("\t")[0] for line in candidates[:-1]}
    agent = run([bin_dir / "dra-node-agent", "--help"], cwd)
    assert "Usage: dra-node-agent" in agent.stdout
    agent_version = run([bin_dir / "dra-node-agent", "--version"], cwd)
    assert agent_version.stdout.strip() == f"dra-node-agent, version {__version__}"


def test_twine_check_passes(packages):
    out = run([TOOLS / "bin" / "python", "-m", "twine", "check", "--strict", packages / SDIST, packages / WHEEL],
              cwd=packages)
    assert out.stdout.count("PASSED") == 2, out.stdout


def package_sources() -> set[str]:
    """Every tracked .py file of the two packages, as the wheel should hold it."""
    listed = subprocess.run(["git", "ls-files", "kubectl_dra", "node_agent"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split()
    return {name for name in listed if name.endswith(".py")}


def test_the_wheel_holds_the_packages_and_nothing_else(packages):
    with zipfile.ZipFile(packages / WHEEL) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"kubectl_dra-{__version__}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"kubectl_dra-{__version__}.dist-info/entry_points.txt").decode()
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n or n.endswith(".pyc")]
    assert {n.split("/")[0] for n in names} == {"kubectl_dra", "node_agent", f"kubectl_dra-{__version__}.dist-info"}
    # a subpackage without __init__.py would be left out by packages.find, and fail only at run time
    assert package_sources() <= names, sorted(package_sources() - names)
    # nothing in the packages reads a data file at run time (no importlib.resources, no paths
    # beside __file__), so the wheel carries Python files only, plus the license
    assert {n for n in names if not n.endswith(".py") and ".dist-info/" not in n} == set()
    assert f"kubectl_dra-{__version__}.dist-info/licenses/LICENSE" in names
    assert f"\nVersion: {__version__}\n" in metadata and "Requires-Python: >=3.11" in metadata
    assert "Description-Content-Type: text/markdown" in metadata and "Project-URL: Homepage" in metadata
    for command in COMMANDS:
        assert f"\n{command} = " in entry_points


def test_the_sdist_holds_what_a_build_needs(packages):
    with tarfile.open(packages / SDIST) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "node_agent/podresources/api.proto"} <= names
    assert package_sources() <= names
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]


def test_the_wheel_installs_into_a_clean_venv_and_runs(packages, tmp_path):
    bin_dir = venv_with(tmp_path, "venv", packages / WHEEL)
    where = run([bin_dir / "python", "-c", "import kubectl_dra, node_agent; print(kubectl_dra.__file__)"],
                tmp_path).stdout.strip()
    assert where.startswith(str(tmp_path / "venv")), where  # the installed package, not the checkout
    installed = run([bin_dir / "python", "-c", "import importlib.metadata as m; print(m.version('kubectl-dra'))"],
                    tmp_path).stdout.strip()
    assert installed == __version__
    check_commands(bin_dir, tmp_path)


def test_the_sdist_builds_and_installs_into_a_clean_venv(packages, tmp_path):
    bin_dir = venv_with(tmp_path, "venv", packages / SDIST)
    assert run([bin_dir / "kubectl-dra", "version"], tmp_path).stdout.strip() == f"kubectl-dra {__version__}"


def test_pipx_install_puts_the_three_commands_on_path(packages, tmp_path):
    run([TOOLS / "bin" / "python", "-m", "pip", "install", "--quiet", "pipx"], cwd=tmp_path)
    home, bin_dir = tmp_path / "pipx-home", tmp_path / "pipx-bin"
    env = clean_env(PIPX_HOME=str(home), PIPX_BIN_DIR=str(bin_dir), PIPX_MAN_DIR=str(tmp_path / "pipx-man"))
    run([TOOLS / "bin" / "python", "-m", "pipx", "install", "--pip-args=" + " ".join(NO_COMPILE), packages / WHEEL],
        cwd=tmp_path, env=env)
    assert sorted(p.name for p in bin_dir.iterdir()) == sorted(COMMANDS)
    check_commands(bin_dir, tmp_path)
    listed = run([TOOLS / "bin" / "python", "-m", "pipx", "list", "--short"], cwd=tmp_path, env=env)
    assert listed.stdout.split() == ["kubectl-dra", __version__]
