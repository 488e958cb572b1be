"""What the agent image carries: the modules ``dra-node-agent`` can import, and nothing else.

The agent is a fraction of the project. Its import graph starts at ``node_agent`` and reaches 88 of
``kubectl_dra``'s modules and a few distributions; the CLI's allocator, scheduler and CEL engine
(cel-expr-python alone is 50 MiB), the client's asyncio twin and the 57 MiB of generated API and
model classes of the official client (the agent talks to the API server through
``kubectl_dra.kube.client.Session``; the client's ``api`` and ``models`` packages load their
classes lazily, so their ``__init__`` files stay) are never loaded by it. The image leaves them out.

- ``agent_modules()``: every module of this project that the agent can import, from the import
  statements of its source (function-level ones included), so a lazy import is counted too;
- ``pins()``: the distributions those modules need, and what they require, as installed here;
- ``LEFT_OUT``: what ``scripts/build-image`` deletes after pip, each with the reason.

``tests/e2e/test_image_contents.py`` runs the agent's modes and fails when one loads a module the
image leaves out, and when the pins file disagrees with ``pins()``.

    python scripts/image_contents.py pins            # scripts/image-requirements.txt's pins
    python scripts/image_contents.py prune SITE      # delete what the agent never loads from SITE
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import shutil
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
OURS = ("kubectl_dra", "node_agent")
# distributions a requirement brings that only a part the image leaves out imports: the official
# client requires aiohttp for kubernetes.aio alone
ONLY_FOR_LEFT_OUT = {"aiohttp", "aiohttp-retry"}
# (glob under dist-packages, why the agent never loads it); a glob ending in "/*" keeps __init__.py
LEFT_OUT = (
    ("kubernetes/aio", "the client's asyncio twin (68 MiB): nothing imports it"),
    ("kubernetes/client/api/*", "generated API classes: the agent's requests go through its own Session"),
    ("kubernetes/client/models/*", "generated models: the agent decodes JSON into its own pydantic views"),
    ("kubernetes/**/*_test.py", "the client's own tests"),
    ("kubernetes/**/test_*.py", "the client's own tests"),
    ("kubernetes/e2e_test", "the client's own tests"),
    ("psutil/tests", "psutil's own tests"),
    ("bin", "scripts pip wrote for the build host's Python; the image has its own launcher"),
)


def _source(name: str) -> Path | None:
    path = ROOT / name.replace(".", "/")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def _imported(name: str, source: Path) -> set[str]:
    """Every module an import statement anywhere in ``source`` names (``from a import b``: a and a.b)."""
    package = name if source.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Attribute) and node.attr == "import_module":
            raise ValueError(f"{source}: importlib.import_module is beyond this static closure; the agent must "
                             f"not reach it")
    return found


def agent_modules() -> tuple[set[str], set[str]]:
    """(this project's modules the agent can import, the top-level names of everything else it imports)."""
    ours: set[str] = set()
    others: set[str] = set()
    todo = [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "node_agent").rglob("*.py")]
    while todo:
        name = todo.pop().removesuffix(".__init__")
        if name in ours:
            continue
        if name.split(".")[0] not in OURS:
            others.add(name.split(".")[0])
            continue
        source = _source(name)
        if source is None:
            continue  # ``from package import function``: the name is not a module
        ours.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(_imported(name, source))
    return ours, others - set(sys.stdlib_module_names) - {"__future__"}


def _key(name: str) -> str:
    return name.lower().replace("_", "-")


def pins() -> dict[str, str]:
    """name -> installed version of every distribution the agent's imports need (extras off)."""
    from packaging.requirements import Requirement  # a build tool's dependency: only for the pins

    _, imports = agent_modules()
    providers = metadata.packages_distributions()
    seen: dict[str, str] = {}

    def walk(name: str) -> None:
        key = _key(name)
        if key in seen or key in ONLY_FOR_LEFT_OUT:
            return
        dist = metadata.distribution(name)
        seen[key] = dist.version
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                walk(requirement.name)

    for name in sorted(imports):
        for dist in providers.get(name, []):
            walk(dist)
    return dict(sorted(seen.items()))


def prune(site: Path) -> list[str]:
    """Delete ``LEFT_OUT`` and this project's modules the agent never imports from ``site``; what went."""
    gone = []
    for pattern, _ in LEFT_OUT:
        keep_init = pattern.endswith("/*")
        for path in sorted(site.glob(pattern), reverse=True):
            if keep_init and path.name == "__init__.py":
                continue
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            gone.append(str(path.relative_to(site)))
    ours, _ = agent_modules()
    for package in OURS:
        for path in sorted((site / package).rglob("*.py")):
            name = ".".join(path.relative_to(site).with_suffix("").parts).removesuffix(".__init__")
            if name not in ours:
                path.unlink()
                gone.append(str(path.relative_to(site)))
    for package in OURS:  # packages left with nothing
        for directory in sorted((site / package).rglob("*"), reverse=True):
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()
    return gone


def main(argv: list[str]) -> int:
    if argv[:1] == ["pins"]:
        for name, version in pins().items():
            print(f"{name}=={version}")
        return 0
    if argv[:1] == ["prune"] and len(argv) == 2:
        gone = prune(Path(argv[1]))
        print(f"left out {len(gone)} paths the agent never loads")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
