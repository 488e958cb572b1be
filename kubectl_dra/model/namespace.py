"""Namespace view: only its labels matter here (inter-pod affinity's ``namespaceSelector``)."""

from __future__ import annotations

from typing import ClassVar

from kubectl_dra.model.base import KubeObject, view


@view
class Namespace(KubeObject):
    KIND: ClassVar[str] = "Namespace"
    GROUP: ClassVar[str] = ""
    VERSIONS: ClassVar[tuple[str, ...]] = ("v1",)
    PLURAL: ClassVar[str] = "namespaces"
    NAMESPACED: ClassVar[bool] = False
