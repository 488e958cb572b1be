"""``-o json`` / ``-o yaml``: the command's result document, serialized; ``-o name``."""

from __future__ import annotations

import json
from typing import Any

import yaml

from pydantic import BaseModel

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

