"""The runtime closure of kubectl-dra's dependencies, as installed in this environment: what the agent
image must carry. ``python scripts/image_requirements.py > scripts/image-requirements.txt`` (after
the header) regenerates the image's pins; the unit tests compare the two."""

from __future__ import annotations

import importlib.metadata as metadata

from packaging.requirements import Requirement


def runtime_closure(project: str = "kubectl-dra") -> dict[str, str]:
    """name -> installed version of every distribution the project needs at run time (extras off)."""
    seen: dict[str, str] = {}

    def walk(name: str) -> None:
        key = name.lower().replace("_", "-")
        if key in seen:
            return
        dist = metadata.distribution(name)
        seen[key] = dist.version
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                walk(requirement.name)

    walk(project)
    del seen[project]
    return dict(sorted(seen.items()))


if __name__ == "__main__":
    for name, version in runtime_closure().items():
        print(f"{name}=={version}")
