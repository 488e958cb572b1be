"""Which kinds the tool understands, in which API versions, and turning raw dicts into views."""

from __future__ import annotations

import functools
import re
from typing import Annotated, ClassVar, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

from kubectl_dra.decoding import json_value
from kubectl_dra.errors import InputError
from kubectl_dra.model.base import KubeObject, View, field_path, view

OWN_GROUP = "kubectl-dra.io"
OWN_KINDS = {"InstanceTypeCatalog": ("v1alpha1",)}
"""Our own documents that are no API objects: kept as plain dicts in the inventory."""


@view
class NodeEnforcementReportObject(KubeObject):
    """The agent's per-node report as an API object (cluster-scoped custom resource)."""

    KIND: ClassVar[str] = "NodeEnforcementReport"
    GROUP: ClassVar[str] = OWN_GROUP
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1alpha1",)
    PLURAL: ClassVar[str] = "nodeenforcementreports"
    NAMESPACED: ClassVar[bool] = False

    status: dict = Field(default_factory=dict)


@functools.cache
def models() -> tuple[type[KubeObject], ...]:
    """Every kind the tool reads. Imported on first use: a command that reads one kind (a live
    ``claims`` list) does not pay for creating the view classes of the fifteen others."""
    # start-up: light
    from kubectl_dra.model.karpenter import NodeClaim, NodeOverlay, NodePool
    from kubectl_dra.model.namespace import Namespace
    from kubectl_dra.model.node import Node
    from kubectl_dra.model.pod import Pod
    from kubectl_dra.model.claim import ResourceClaim, ResourceClaimTemplate
    from kubectl_dra.model.resource import DeviceClass, DeviceTaintRule, ResourceSlice
    from kubectl_dra.model.scheduling import PodGroup
    from kubectl_dra.model.storage import (CSIDriver, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass,
                                           VolumeAttachment)
    from kubectl_dra.model.workloads import Deployment, Job, ReplicaSet, StatefulSet

    return (Pod, Node, ResourceClaim, ResourceClaimTemplate, ResourceSlice, DeviceClass, DeviceTaintRule, PodGroup,
            NodePool, NodeClaim, NodeOverlay, Deployment, ReplicaSet, StatefulSet, Job, NodeEnforcementReportObject,
            Namespace, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver, VolumeAttachment)


@functools.cache
def by_group_kind() -> dict[tuple[str, str], type[KubeObject]]:
    return {(m.GROUP, m.KIND): m for m in models()}


def split_api_version(api_version: str) -> tuple[str, str]:
    """``resource.k8s.io/v1`` -> ("resource.k8s.io", "v1"); ``v1`` -> ("", "v1")."""
    group, _, version = api_version.rpartition("/")
    return group, version


def format_validation_error(error: ValidationError) -> str:
    """The first problem as ``path.to[0].field: reason``, the way a user would look it up."""
    first = error.errors()[0]
    path = field_path(tuple(first["loc"]))
    message = first["msg"]
    # A quantity parser's own message already quotes the input; pydantic prefixes "Value error, ".
    message = message.removeprefix("Value error, ")
    more = len(error.errors()) - 1
    suffix = f" (and {more} more)" if more else ""
    return f"{path}: {message}{suffix}" if path else message + suffix


def describe(raw: dict) -> str:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    name = meta.get("name") or "<unnamed>"
    ns = meta.get("namespace")
    return f"{raw.get('kind') or '<no kind>'} {ns + '/' if ns else ''}{name}"


def invalid_field_problems(obj: KubeObject) -> list[str]:
    """One line per dropped field, naming the object and the field (the object itself was kept)."""
    return [f"{obj.KIND} {obj.key}: {field.path}: {field.reason} (the object is kept; what depends on this "
            "field is shown as unknown)" for field in obj.invalid_fields]


def parse_object(raw: dict, keep_raw: bool = True, view: type[KubeObject] | None = None) -> KubeObject | dict | None:
    """Turn one raw object into its view.

    Returns ``None`` for kinds this tool does not read (they are ignored, as docs/contracts.md §5.1 says),
    ``view``'s object for its kind when given (a lighter view of the same kind),
    the raw dict for our own kinds, and raises :class:`InputError` for a known kind in a version
    we do not know or that cannot be kept at all. An object with fields that do not validate is
    kept with those fields dropped and recorded (see :func:`invalid_field_problems`).
    """
    if not isinstance(raw, dict):
        raise InputError(f"expected an object, found {type(raw).__name__}")
    kind, api_version = raw.get("kind"), raw.get("apiVersion")
    missing = [field for field, value in (("apiVersion", api_version), ("kind", kind))
               if not isinstance(value, str) or not value]
    if missing:
        present = f" ({describe(raw)})" if "kind" not in missing else ""
        raise InputError(f"object without {' and '.join(missing)}{present}")
    group, version = split_api_version(api_version)
    if group == OWN_GROUP and kind in OWN_KINDS:
        if version not in OWN_KINDS[kind]:
            raise InputError(f"{describe(raw)}: unknown API version {api_version} (this tool reads "
                             f"{', '.join(OWN_GROUP + '/' + v for v in OWN_KINDS[kind])})")
        return raw
    model = by_group_kind().get((group, kind))
    if model is None:
        same_kind = [m for m in by_group_kind().values() if m.KIND == kind]
        ours = {m.GROUP for m in by_group_kind().values()}
        # a kind this tool reads under another of the groups it reads (apiVersion v1 on a
        # ResourceClaim): a mistake, never silently "not ours". A CRD's own group (scheduler-plugins'
        # scheduling.x-k8s.io PodGroup) is another kind that happens to share the name: ignored.
        if same_kind and group in ours:
            known = ", ".join(f"{m.GROUP + '/' if m.GROUP else ''}{v}" for m in same_kind for v in m.VERSIONS)
            raise InputError(f"{describe(raw)}: unknown API version {api_version} (this tool reads {known})")
        return None
    if version not in model.VERSIONS:
        known = ", ".join(f"{group + '/' if group else ''}{v}" for v in model.VERSIONS)
        raise InputError(f"{describe(raw)}: unknown API version {api_version} (this tool reads {known})")
    meta = raw.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        # the API server's words; without a name the object cannot be told apart from the others
        raise InputError(f"{describe(raw)}: metadata.name: Required value: name or generateName is required "
                         "(the object is skipped)")
    if view is not None and view.KIND == model.KIND:
        model = view
    try:
        return model.from_raw(raw, keep_raw)
    except ValidationError as exc:
        raise InputError(f"{describe(raw)}: {format_validation_error(exc)}") from None


# -- list pages straight from JSON ------------------------------------------------------------

@view
class _ListMeta(View):
    continue_: str | None = Field(default=None, alias="continue")
    resource_version: str | None = Field(default=None, alias="resourceVersion")


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="ignore")
    metadata: _ListMeta = Field(default_factory=_ListMeta)


_ENVELOPE = TypeAdapter(_Envelope)
_PAGES: dict[tuple[type[KubeObject], type | None], TypeAdapter] = {}


_HEAD = re.compile(rb'\A\s*\{\s*"kind"\s*:\s*"\w*List"\s*,\s*"apiVersion"\s*:\s*"[\w./-]*"\s*,'
                   rb'\s*"metadata"\s*:\s*(\{[^{}\[\]]*\})')


def list_continue(data: bytes) -> str | None:
    """The ``continue`` token of one list page, read without building its items; raises
    :class:`InputError` when the page is not a JSON object. An API server writes ``kind``,
    ``apiVersion`` and a flat ``metadata`` first: that head is all that is read then (a 1 MB page
    of pods is not scanned twice); any other shape is parsed whole."""
    token = list_metadata(data).get("continue")
    return token if isinstance(token, str) and token else None


def list_resource_version(data: bytes) -> str | None:
    """The ``resourceVersion`` of one list page: where a watch of the same list starts."""
    version = list_metadata(data).get("resourceVersion")
    return version if isinstance(version, str) and version else None


def list_metadata(data: bytes) -> dict:
    """A list page's ``metadata`` (from its head when the server wrote it first, as it does)."""
    head = _HEAD.match(data[:4096])
    if head is not None:
        try:
            meta = json_value(head.group(1))
        except ValueError:
            meta = None
        if isinstance(meta, dict):
            return meta
    try:
        meta = _ENVELOPE.validate_json(data).metadata
    except ValidationError:
        raise InputError("the server did not answer with a JSON object") from None
    return {"continue": meta.continue_, "resourceVersion": meta.resource_version}


def parse_page(model: type[KubeObject], data: bytes, api_version: str,
               skip: type | None = None) -> list[KubeObject] | None:
    """Every item of one list page parsed straight from JSON into ``model`` (no intermediate
    dicts, none of the fields the model ignores kept): the fast path, for pages in the model's
    own API version where every item is valid. ``None`` sends the page to the tolerant path
    (:func:`parse_object` per item), which keeps what it can and names what it drops. ``skip``: a
    view tried first on each item; the items it validates are left out (never built as ``model``)."""
    if model.GROUP == OWN_GROUP or split_api_version(api_version)[1] != model.VERSIONS[0]:
        return None  # older versions are normalized first; our own report stays a dict
    decode = getattr(model, "decode_page", None)
    if decode is not None:  # a view with its own decoder (model/podcache.py)
        return decode(data)
    adapter = _PAGES.get((model, skip))
    if adapter is None:
        item = model if skip is None else Annotated[Union[skip, model], Field(union_mode="left_to_right")]
        page = create_model(f"{model.__name__}Page", __config__=ConfigDict(extra="ignore"),
                            items=(list[item] | None, None))
        adapter = _PAGES[(model, skip)] = TypeAdapter(page)
    try:
        items = adapter.validate_json(data).items or []
    except ValidationError:
        return None
    if skip is not None:
        items = [obj for obj in items if isinstance(obj, model)]
    for obj in items:
        if not obj.metadata.name:
            return None
        object.__setattr__(obj, "api_version", api_version)  # as the tolerant path sets them from the list
        object.__setattr__(obj, "kind", model.KIND)
    return items
