"""``-o json`` / ``-o yaml``: the command's result document, serialized; ``-o name``."""

from __future__ import annotations

import json
from typing import Any

import yaml

from pydantic import BaseModel

API_VERSION = "kubectl-dra.io/v1alpha1"
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def as_document(result: BaseModel | dict) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True)
    return result


def to_json(result: BaseModel | dict) -> str:
    return json.dumps(as_document(result), indent=2, ensure_ascii=False) + "\n"


def to_yaml(result: BaseModel | dict) -> str:
    return yaml.dump(as_document(result), Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True)


def resource_name(kind_plural: str, group: str, name: str) -> str:
    """``-o name`` as kubectl prints it: ``resourceclaim.resource.k8s.io/gpu-claim``."""
    singular = kind_plural[:-1] if kind_plural.endswith("s") else kind_plural
    return f"{singular}.{group}/{name}" if group else f"{singular}/{name}"
