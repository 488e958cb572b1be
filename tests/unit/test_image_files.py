"""The agent image's inputs stay in step with the project: the pins scripts/build-image installs are
exactly the runtime closure of pyproject.toml's dependencies in this environment, and the
Containerfile installs the same pins in the same places with the same user, environment,
entrypoint and command as scripts/build-image."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from image_requirements import runtime_closure  # noqa: E402


def pins() -> dict[str, str]:
    lines = (ROOT / "scripts" / "image-requirements.txt").read_text().splitlines()
    return dict(line.split("==", 1) for line in lines if line and not line.startswith("#"))


def test_the_image_pins_are_the_runtime_closure():
    assert pins() == runtime_closure()


def containerfile() -> dict[str, object]:
    """The final stage's USER, ENV, ENTRYPOINT and CMD, and every RUN line."""
    text = (ROOT / "Containerfile").read_text().replace("\\\n", " ")
    final = text.split("\nFROM ")[-1]
    out: dict[str, object] = {"run": re.findall(r"^RUN (.*)$", text, re.M)}
    for key in ("USER", "ENV", "ENTRYPOINT", "CMD"):
        match = re.search(rf"^{key} (.*)$", final, re.M)
        out[key] = match.group(1).strip() if match else None
    return out


def build_image_config() -> dict[str, object]:
    """The image config scripts/build-image passes to oci_image.py (the last command of the script)."""
    text = (ROOT / "scripts" / "build-image").read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if "oci_image.py\" \"$OUT.tmp\"" in line)
    args = shlex.split(line.split(">/dev/null")[0])
    config: dict[str, object] = {"Env": []}
    for flag, value in zip(args, args[1:]):
        if flag == "--entrypoint":
            config["Entrypoint"] = [value]
        elif flag == "--cmd":
            config["Cmd"] = [value]
        elif flag == "--user":
            config["User"] = value
        elif flag == "--env":
            config["Env"].append(value)
    return config


def test_the_containerfile_and_build_image_make_the_same_image():
    ours, theirs = build_image_config(), containerfile()
    assert json.loads(theirs["ENTRYPOINT"]) == ours["Entrypoint"] == ["dra-node-agent"]
    assert json.loads(theirs["CMD"]) == ours["Cmd"] == ["run"]
    assert theirs["USER"] == ours["User"] == "65532:65532"
    assert sorted(shlex.split(theirs["ENV"])) == sorted(ours["Env"])
    pip = next(run for run in theirs["run"] if "pip install" in run)
    assert "--prefix=/usr/local" in pip and "python3.11 -m pip" in pip and "image-requirements.txt" in pip
    assert "--no-deps" in pip and "kubernetes/aio" in pip  # the same pins, the same pruning
    script = (ROOT / "scripts" / "build-image").read_text()
    assert "usr/local/lib/python3.11/dist-packages" in script and "#!/usr/bin/python3.11" in script
    runtime = [run for run in theirs["run"] if "apt-get install" in run][-1]
    packages = script.split("PACKAGES=")[1].split()[0].split(",")
    # the same Debian packages in both runtime images (libstdc++6: grpcio's native module needs it)
    assert packages == ["python3.11-minimal", "libpython3.11-stdlib", "libstdc++6"]
    assert all(package in runtime.split() for package in packages)
