"""The API objects of a snapshot directory (examples/, tests/fixtures/), exactly as written: what the
cluster and skew tiers load into real API servers and the fault server serves."""

from __future__ import annotations

from pathlib import Path

from kubectl_dra.kube.snapshot import read_documents, snapshot_files

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cluster"


def raw_objects(path: Path) -> list[dict]:
    """Every API object in a snapshot directory, exactly as written (our own documents aside)."""
    objects = []
    for file in snapshot_files(path):
        for doc in read_documents(file):
            items = doc["items"] if doc.get("kind") == "List" else [doc]
            objects += [o for o in items if isinstance(o, dict) and o.get("kind") != "InstanceTypeCatalog"]
    return objects
