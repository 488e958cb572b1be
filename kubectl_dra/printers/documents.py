"""``-o json`` / ``-o yaml``: the command's result document, serialized; ``-o name``."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from pydantic import BaseModel

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def as_document(result: BaseModel | dict) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True)
    return result


# json.dumps escapes C0 controls but writes DEL, C1 controls (U+009B is a CSI to a terminal) and lone
# surrogates (which UTF-8 cannot encode) as they are; outside strings JSON is ASCII, so escaping them
# everywhere keeps the document's meaning and keeps them off the terminal.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff]")


def to_json(result: BaseModel | dict) -> str:
    text = json.dumps(as_document(result), indent=2, ensure_ascii=False) + "\n"
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _JSON_UNSAFE.search(text) else text


def to_yaml(result: BaseModel | dict) -> str:
    """YAML escapes every control character itself; a lone surrogate (no character, so no YAML
    for it) becomes "?" rather than fail the whole document."""
    document = as_document(result)
    try:
        return _dump(document)
    except UnicodeEncodeError:
        return _dump(_without_surrogates(document))


def _dump(document) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


def _without_surrogates(value):
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8") if re.search("[\ud800-\udfff]", value) else value
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value

