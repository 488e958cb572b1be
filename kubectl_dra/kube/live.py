"""Reading a live cluster: discovery once, then one paginated list per kind.

Never one GET per object: commands read whole kinds and join in memory, so the number of calls
depends on the number of kinds, not on the size of the cluster.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator

from kubectl_dra.decoding import TooDeep, json_value
from kubectl_dra.errors import ApiError, InputError
from kubectl_dra.gcpause import gc_paused
from kubectl_dra.kube.client import Session
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.base import KubeObject
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import (invalid_field_problems, list_continue, list_resource_version, parse_object,
                                        parse_page)
from kubectl_dra.versions import minor_of

PAGE_SIZE = 500  # kubectl's --chunk-size default
# field labels a list may select on only from a release on (the registry's GetAttrs of that release:
# docs/kubernetes/versions.md §2); an older server refuses the list with "field label not supported"
SELECTABLE_SINCE = {("ResourceSlice", "spec.pool.name"): 37}
MAX_LIST_RESTARTS = 3


class ServedVersions:
    """Which versions of each API group the server serves, in its preference order."""

    def __init__(self, groups: dict[str, list[str]]):
        self.groups = groups
        # group version -> the resources its discovery lists (None: unreadable), read once for every
        # source that shares this discovery (the agent's watches each have a source)
        self.resources: dict[str, set[str] | None] = {}

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

    def __init__(self, session: Session, served: ServedVersions | None = None):
        self.session = session
        self._served = served  # discovery, shared by sources of one session (a watch has its own source)
        self._continuing = False  # whether the request in flight carried a continue token
        self._executor = None  # the helper threads that fetch pages ahead
        self._primed: dict = {}  # (path, query) -> the first page, asked for early
        self.list_version: str | None = None  # resourceVersion of the last list read (where a watch starts)
        self._server_version: tuple[str | None, str] | None = None

    @property
    def description(self) -> str:
        return self.session.server

    def server_version(self) -> tuple[str | None, str]:
        """The API server's ``gitVersion`` and where it came from (``GET /version``), or None and
        why it could not be read: never a guess. Asked once per source."""
        if self._server_version is None:
            try:
                doc = self.session.get("/version")
            except ApiError as exc:
                self._server_version = (None, f"GET /version failed: {exc}")
            else:
                version = doc.get("gitVersion") if isinstance(doc, dict) else None
                self._server_version = (version, "GET /version") if isinstance(version, str) and version else \
                    (None, "GET /version answered without a gitVersion")
        return self._server_version

    def field_selectable(self, model, field: str) -> bool:
        """Whether this server lists ``model`` by ``field`` (a release that is not known: no)."""
        since = SELECTABLE_SINCE.get((model.KIND, field))
        if since is None:
            return True
        minor = minor_of(self.server_version()[0])
        return minor is not None and minor >= since

    def served(self) -> ServedVersions:
        if self._served is None:
            self._served = ServedVersions.discover(self.session)
        return self._served

    def read(self, requests: Iterable[ReadRequest], into: Inventory | None = None) -> Inventory:
        """The kinds asked for, into a new inventory (or ``into``: 100,000 pods are not added twice)."""
        inventory = into if into is not None else Inventory()
        requests = list(requests)
        primed = self.prime(requests) if len(requests) > 1 else []
        try:
            with gc_paused():
                for request in requests:
                    self._read_kind(request, inventory)
        finally:  # a page asked for ahead and not used must not be served to a later read
            for key in primed:
                self._primed.pop(key, None)
        return inventory

    def _read_kind(self, request: ReadRequest, inventory: Inventory) -> None:
        api_version = self.api_version_of(request, inventory)
        if api_version is None:
            return
        objects: list = []
        problems: list[str] = []
        try:
            for page in self._parsed_pages(request, api_version):
                if page is None:  # started over: what the expired pass read is dropped
                    objects, problems = [], []
                    continue
                objects += page[0] if request.keep is None else [o for o in page[0] if request.keep(o)]
                problems += page[1]
        except ApiError as exc:
            self._refused(request, exc, inventory)
            return
        for problem in problems:
            inventory.problem(problem, kind=request.model.KIND)
        inventory.extend(objects)
        inventory.read_kinds.add(request.model.KIND)

    def stream(self, request: ReadRequest, inventory: Inventory) -> Iterator[KubeObject]:
        """One kind's objects as their pages arrive, held by nobody here (problems and whether the
        kind was read go to ``inventory``). A list that starts over after an expired continue
        token does not yield an object twice."""
        api_version = self.api_version_of(request, inventory)
        if api_version is None:
            return
        seen: set[tuple[str | None, str]] = set()
        try:
            for page in self._parsed_pages(request, api_version):
                if page is None:
                    continue
                for problem in page[1]:
                    inventory.problem(problem, kind=request.model.KIND)
                for obj in page[0]:
                    key = (obj.namespace, obj.name)
                    if key in seen or (request.keep is not None and not request.keep(obj)):
                        continue
                    seen.add(key)
                    yield obj
        except ApiError as exc:
            self._refused(request, exc, inventory)
            return
        inventory.read_kinds.add(request.model.KIND)

    def api_version_of(self, request: ReadRequest, inventory: Inventory) -> str | None:
        """The API version to list the kind in, or None after recording why it cannot be read."""
        model = request.model
        version = model.VERSIONS[0] if not model.GROUP else self.served().choose(model.GROUP, model.VERSIONS)
        candidates = [v for v in model.VERSIONS if v in self.served().groups.get(model.GROUP, ())] if model.GROUP else []
        if len(candidates) > 1:  # kinds differ between versions of a group: the first that lists this one
            version = next((v for v in candidates if model.PLURAL in (self._resources_of(f"{model.GROUP}/{v}")
                                                                      or {model.PLURAL})), None)
            if version is None:
                self._not_served(request, candidates, inventory)
                return None
        if version is None:
            served = self.served().groups.get(model.GROUP)
            detail = (f"it serves {model.GROUP} {', '.join(served)}" if served else f"{model.GROUP} is not served")
            inventory.problem(
                f"cannot read {model.KIND} objects: this tool reads {model.GROUP} "
                f"{', '.join(model.VERSIONS)} and {detail}",
                kind=model.KIND, severity="error" if request.required else "warning", not_served=not served)
            return None
        return f"{model.GROUP}/{version}" if model.GROUP else version

    def _refused(self, request: ReadRequest, exc: ApiError, inventory: Inventory) -> None:
        """A 403 or 404 makes the kind unread (a problem); anything else ends the command. A 404
        where the group version is served and does not list the kind is a kind this release does
        not serve there (DeviceTaintRule in resource.k8s.io/v1 before 1.37): said as such."""
        if exc.status not in (403, 404):
            raise exc
        model = request.model
        if exc.status == 404 and model.GROUP:
            version = self.served().choose(model.GROUP, model.VERSIONS)
            listed = self._resources_of(f"{model.GROUP}/{version}")
            if listed is not None and model.PLURAL not in listed:
                self._not_served(request, [version], inventory)
                return
        verb = "list" if exc.status == 403 else "find"
        inventory.problem(f"cannot {verb} {request.resource}: {exc}", kind=model.KIND,
                          severity="error" if request.required else "warning")

    @staticmethod
    def _not_served(request: ReadRequest, versions: list[str], inventory: Inventory) -> None:
        model = request.model
        inventory.problem(f"cannot read {model.KIND} objects: this server serves {model.GROUP} {', '.join(versions)} "
                          f"without {model.PLURAL}", kind=model.KIND,
                          severity="error" if request.required else "warning", not_served=True)

    def _resources_of(self, group_version: str) -> set[str] | None:
        """The resources one group version lists (its discovery document, read once), None if unreadable."""
        known = self.served().resources
        if group_version not in known:
            try:
                doc = self.session.get(f"/apis/{group_version}")
            except ApiError:
                doc = None
            known[group_version] = {r.get("name") for r in doc.get("resources") or []
                                    if isinstance(r, dict)} if isinstance(doc, dict) else None
        return known[group_version]

    def _parsed_pages(self, request: ReadRequest, api_version: str) -> Iterator[tuple[list, list[str]] | None]:
        """``(objects, problems)`` per page, parsed as the pages arrive (the next one is on its way
        meanwhile); ``None`` when the list starts over because its continue token expired."""
        restarts = 0
        while True:
            try:
                for data in self.pages(request, api_version):
                    yield self._parse_page(request, data, api_version)
                return
            except ApiError as exc:
                if exc.status == 410 and self._continuing:
                    if restarts < MAX_LIST_RESTARTS:
                        restarts += 1  # the snapshot behind the token expired: list again from the start
                        yield None
                        continue
                    raise ApiError(
                        f"cannot list {request.resource}: the server's list snapshot expired while paging "
                        f"({restarts + 1} times, HTTP 410); the objects change faster than {PAGE_SIZE}-object "
                        "pages can be read. Try again, or narrow the read with -n or -l", status=410) from None
                raise

    @staticmethod
    def _parse_page(request: ReadRequest, data: bytes, api_version: str) -> tuple[list, list[str]]:
        """Straight from JSON into the models when the page is clean; else item by item, keeping
        what can be kept and naming what was dropped."""
        model = request.view or request.model
        fast = None if request.keep_raw else parse_page(model, data, api_version, request.skip)
        if fast is not None:
            return fast, []
        objects, problems = [], []
        for raw in _items(data, api_version, request.model.KIND):
            try:
                obj = parse_object(raw, request.keep_raw, view=request.view)
            except InputError as exc:
                problems.append(f"skipped invalid object: {exc}")
                continue
            if obj is not None:
                objects.append(obj)
                if obj.invalid_fields:
                    problems.extend(invalid_field_problems(obj))
        return objects, problems

    def prime(self, requests: Iterable[ReadRequest]) -> list[tuple]:
        """Ask for the first page of each kind now, all at once, so the server is never idle
        between one kind and the next (the command reads them one after another). Returns the
        keys of the pages asked for."""
        keys = []
        for request in requests:
            api_version = self.api_version_of(request, Inventory())
            if api_version is not None:
                path, first = self.list_request(request, api_version)
                key = (path, tuple(first))
                earlier = self._primed.get(key)
                if earlier is None or earlier.done() and _ask_again(earlier.exception()):
                    self._primed[key] = self._pool().submit(self.session.get_bytes, path, first)
                keys.append(key)
        return keys

    def _pool(self):
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=6, thread_name_prefix="kubectl-dra-page")
        return self._executor

    @staticmethod
    def list_request(request: ReadRequest, api_version: str) -> tuple[str, list[tuple[str, str]]]:
        """The path and first-page query of a list (a watch of the same kind uses both, without ``limit``)."""
        model = request.model
        base = "/api/" + api_version if not model.GROUP else "/apis/" + api_version
        if model.NAMESPACED and request.namespace:
            path = f"{base}/namespaces/{request.namespace}/{model.PLURAL}"
        else:
            path = f"{base}/{model.PLURAL}"
        query = [("limit", str(PAGE_SIZE))]
        if request.label_selector:
            query.append(("labelSelector", request.label_selector))
        if request.field_selector:
            query.append(("fieldSelector", request.field_selector))
        return path, query

    def pages(self, request: ReadRequest, api_version: str) -> Iterator[bytes]:
        """The pages of one kind as the server sent them (``limit`` 500, following ``continue``).
        While the caller parses one page, the next is fetched in a helper thread, so the server's
        time and ours overlap instead of adding up."""
        path, first = self.list_request(request, api_version)
        pool = self._pool()
        token = None
        pending = self._primed.pop((path, tuple(first)), None) or pool.submit(self.session.get_bytes, path, first)
        while True:
            self._continuing = bool(token)
            data = pending.result()
            try:
                token = list_continue(data)
                if not self._continuing:  # every page of one list has the first page's snapshot
                    self.list_version = list_resource_version(data)
            except InputError:
                raise ApiError(f"{self.session.server}{path}: the server did not answer with a JSON object") from None
            if token:
                pending = pool.submit(self.session.get_bytes, path, [*first, ("continue", token)])
            yield data
            if not token:
                return


def _ask_again(failure: BaseException | None) -> bool:
    """A first page asked for ahead failed: ask again, unless the server's answer was final (403,
    404: the same answer again, and the read reports it). Asking again for those made a second list
    call whenever the first answer came back before the second ask (a race the e2e tests saw)."""
    return failure is not None and not (isinstance(failure, ApiError) and failure.status in (403, 404))


def _items(data: bytes, api_version: str, kind: str) -> list[dict]:
    """A page's items as dicts, for the tolerant path (each gets the list's apiVersion and kind)."""
    try:
        page = json_value(data)
    except TooDeep as exc:
        raise ApiError(f"the server's answer is {exc}") from None
    except ValueError:
        raise ApiError("the server did not answer with JSON") from None
    items = [item for item in (page.get("items") or [] if isinstance(page, dict) else []) if isinstance(item, dict)]
    for item in items:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return items
