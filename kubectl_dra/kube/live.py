"""Reading a live cluster: discovery once, then one paginated list per kind.

Never one GET per object: commands read whole kinds and join in memory, so the number of calls
depends on the number of kinds, not on the size of the cluster.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from kubectl_dra.errors import ApiError, InputError
from kubectl_dra.gcpause import gc_paused
from kubectl_dra.kube.client import Session
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import invalid_field_problems, parse_object

PAGE_SIZE = 500  # kubectl's --chunk-size default
MAX_LIST_RESTARTS = 3


class ServedVersions:
    """Which versions of each API group the server serves, in its preference order."""

    def __init__(self, groups: dict[str, list[str]]):
        self.groups = groups

    @classmethod
    def discover(cls, session: Session) -> "ServedVersions":
        doc = session.get("/apis")
        groups: dict[str, list[str]] = {"": ["v1"]}
        for group in doc.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("version")
            versions = [v.get("version") for v in group.get("versions") or [] if v.get("version")]
            if preferred in versions:  # preferred first, then the server's order
                versions.remove(preferred)
                versions.insert(0, preferred)
            groups[group.get("name", "")] = versions
        return cls(groups)

    def choose(self, group: str, known: Iterable[str]) -> str | None:
        """The version to read: the first we know (newest first) that the server serves."""
        served = self.groups.get(group, [])
        return next((v for v in known if v in served), None)


class LiveSource:
    """Objects from an API server, through one :class:`Session`."""

    def __init__(self, session: Session):
        self.session = session
        self._served: ServedVersions | None = None
        self._continuing = False  # whether the request in flight carried a continue token

    @property
    def description(self) -> str:
        return self.session.server

    def served(self) -> ServedVersions:
        if self._served is None:
            self._served = ServedVersions.discover(self.session)
        return self._served

    def read(self, requests: Iterable[ReadRequest]) -> Inventory:
        inventory = Inventory()
        with gc_paused():
            for request in requests:
                self._read_kind(request, inventory)
        return inventory

    def _read_kind(self, request: ReadRequest, inventory: Inventory) -> None:
        model = request.model
        version = model.VERSIONS[0] if not model.GROUP else self.served().choose(model.GROUP, model.VERSIONS)
        if version is None:
            served = self.served().groups.get(model.GROUP)
            detail = (f"it serves {model.GROUP} {', '.join(served)}" if served else f"{model.GROUP} is not served")
            inventory.problem(
                f"cannot read {model.KIND} objects: this tool reads {model.GROUP} "
                f"{', '.join(model.VERSIONS)} and {detail}",
                kind=model.KIND, severity="error" if request.required else "warning", not_served=not served)
            return
        api_version = f"{model.GROUP}/{version}" if model.GROUP else version
        try:
            objects, problems = self._parsed_list(request, api_version)
        except ApiError as exc:
            if exc.status in (403, 404):
                verb = "list" if exc.status == 403 else "find"
                inventory.problem(f"cannot {verb} {request.resource}: {exc}", kind=model.KIND,
                                  severity="error" if request.required else "warning")
                return
            raise
        for problem in problems:
            inventory.problem(problem, kind=model.KIND)
        inventory.extend(objects)
        inventory.read_kinds.add(model.KIND)

    def _parsed_list(self, request: ReadRequest, api_version: str) -> tuple[list, list[str]]:
        """Every object of one kind, parsed page by page (so a page's dicts can go as soon as it is
        parsed); a list whose continue token expired starts over, dropping what it had."""
        restarts = 0
        while True:
            objects, problems = [], []
            pages = self.pages(request, api_version)
            try:
                for items in pages:
                    for raw in items:
                        try:
                            obj = parse_object(raw, request.keep_raw)
                        except InputError as exc:
                            problems.append(f"skipped invalid object: {exc}")
                            continue
                        if obj is not None:
                            objects.append(obj)
                            if obj.invalid_fields:
                                problems.extend(invalid_field_problems(obj))
                return objects, problems
            except ApiError as exc:
                if exc.status == 410 and self._continuing:
                    if restarts < MAX_LIST_RESTARTS:
                        restarts += 1  # the snapshot behind the token expired: list again from the start
                        continue
                    raise ApiError(
                        f"cannot list {request.resource}: the server's list snapshot expired while paging "
                        f"({restarts + 1} times, HTTP 410); the objects change faster than {PAGE_SIZE}-object "
                        "pages can be read. Try again, or narrow the read with -n or -l", status=410) from None
                raise

    def pages(self, request: ReadRequest, api_version: str) -> Iterator[list[dict]]:
        """The items of one kind, one page (``limit`` 500) at a time, following ``continue``."""
        model = request.model
        base = "/api/" + api_version if not model.GROUP else "/apis/" + api_version
        if model.NAMESPACED and request.namespace:
            path = f"{base}/namespaces/{request.namespace}/{model.PLURAL}"
        else:
            path = f"{base}/{model.PLURAL}"
        token = None
        while True:
            query = [("limit", str(PAGE_SIZE))]
            if request.label_selector:
                query.append(("labelSelector", request.label_selector))
            if request.field_selector:
                query.append(("fieldSelector", request.field_selector))
            if token:
                query.append(("continue", token))
            self._continuing = bool(token)
            page = self.session.get(path, query)
            items = [item for item in page.get("items") or [] if isinstance(item, dict)]
            for item in items:
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", model.KIND)
            yield items
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
