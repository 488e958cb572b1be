"""The agent image's inputs stay in step with the agent: the pins scripts/build-image installs are
exactly what the agent's imports need in this environment (scripts/image_contents.py), and the
static import closure that decides what the image carries is right about this project's code.
tests/e2e/test_image_contents.py runs the agent and checks what it really loads; tests/release/
test_image.py builds the image."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import image_contents  # noqa: E402


def pins() -> dict[str, str]:
    lines = (ROOT / "scripts" / "image-requirements.txt").read_text().splitlines()
    return dict(line.split("==", 1) for line in lines if line and not line.startswith("#"))


def test_the_image_pins_are_what_the_agents_imports_need():
    assert pins() == image_contents.pins()


def test_the_closure_holds_the_agents_entry_points_and_not_the_clis_engines():
    ours, others = image_contents.agent_modules()
    assert {"node_agent.__main__", "node_agent.service", "node_agent.podresources", "node_agent.podresources.api_pb2_grpc", "node_agent.netns",
            "kubectl_dra.nodescan.scan", "kubectl_dra.kube.client", "kubectl_dra.verify.report"} <= ours
    assert not {m for m in ours if m.startswith(("kubectl_dra.allocation", "kubectl_dra.scheduling",
                                                 "kubectl_dra.overlays", "kubectl_dra.cli."))}
    assert {"grpc", "pydantic", "kubernetes", "pyroute2", "prometheus_client", "psutil"} <= others
    assert not others & {"cel_expr_python", "msgspec", "semver"}
    assert {"cel-expr-python", "msgspec", "semver", "aiohttp"}.isdisjoint(image_contents.pins())


def test_the_closure_follows_imports_inside_functions(tmp_path, monkeypatch):
    """A lazy import (inside a function, as the start-up paths defer them) is counted, relative ones
    are resolved, and a module that imports importlib.import_module is refused (the closure could not
    see what it loads)."""
    package = tmp_path / "node_agent"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "main.py").write_text("def run():\n    from .lazy import x\n    import kubectl_dra.deep\n")
    (package / "lazy.py").write_text("x = 1\n")
    (tmp_path / "kubectl_dra").mkdir()
    (tmp_path / "kubectl_dra" / "__init__.py").write_text("")
    (tmp_path / "kubectl_dra" / "deep.py").write_text("import json\nimport yaml\n")
    (tmp_path / "kubectl_dra" / "unused.py").write_text("import cel_expr_python\n")
    monkeypatch.setattr(image_contents, "ROOT", tmp_path)
    ours, others = image_contents.agent_modules()
    assert ours == {"node_agent", "node_agent.main", "node_agent.lazy", "kubectl_dra", "kubectl_dra.deep"}
    assert others == {"yaml"}
    (package / "dynamic.py").write_text("import importlib\nimportlib.import_module('x')\n")
    try:
        image_contents.agent_modules()
    except ValueError as exc:
        assert "import_module" in str(exc)
    else:
        raise AssertionError("a dynamic import was not refused")


def test_what_is_left_out_is_said_with_a_reason():
    for pattern, why in image_contents.LEFT_OUT:
        assert pattern and why and not pattern.startswith("/")
