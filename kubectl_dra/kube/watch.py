"""A typed watch of one kind: what ``kubectl get -w`` does, plus what a reflector adds.

The list comes first (its objects and the list's resourceVersion), then a watch from that
resourceVersion with ``allowWatchBookmarks=true``. Events are yielded as typed objects; bookmarks
only move the resourceVersion on. A stream the server ends (its ``timeoutSeconds``) or that
drops is resumed from the last resourceVersion seen, so no change is missed or repeated. When
that resourceVersion has expired (410 Gone, as an answer or as an ERROR event) the kind is listed
again and the difference from what was known is yielded as events (ADDED, MODIFIED, DELETED with
the last state seen), as an informer's relist does. The watch ends when ``deadline`` passes
(``--request-timeout``) and raises :class:`ApiError` when the server refuses it or stays
unreachable. Nothing here prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

from kubectl_dra.errors import ApiError, InputError
from kubectl_dra.kube.live import LiveSource
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.base import KubeObject
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import parse_object

STREAM_SECONDS = 300  # timeoutSeconds of one watch request (client-go picks 5-10 minutes)
READ_SLACK = 15.0  # seconds past timeoutSeconds before a silent stream counts as dropped
RESUME_ATTEMPTS = 5  # consecutive failures to reconnect before the watch gives up
RESUME_BACKOFF = 0.5  # seconds, doubled each failed attempt


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED
    object: KubeObject


def _key(obj: KubeObject) -> tuple[str | None, str]:
    return obj.namespace, obj.name


class KindWatch:
    """List one kind, then follow its changes (see the module docstring)."""

    def __init__(self, source: LiveSource, request: ReadRequest, *, deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 warn: Callable[[str], None] = lambda message: None, resume_attempts: int = RESUME_ATTEMPTS,
                 stream_seconds: Callable[[], float] = lambda: STREAM_SECONDS):
        # a source of its own (same session, same discovery): a list records its resourceVersion
        # on the source, and the taint view lists other kinds meanwhile in another thread
        self.source, self.request = LiveSource(source.session, served=source.served()), request
        self.deadline, self.clock, self.sleep, self.warn = deadline, clock, sleep, warn
        # how many times in a row an unreachable server is retried before events() raises (0: at
        # once, for a cache that must not serve what it can no longer follow), and how long one
        # stream asks to last (a cache on every node draws it at random: no reconnect storms)
        self.resume_attempts, self.stream_seconds = resume_attempts, stream_seconds
        self.closed = False
        self._response = None  # the open stream, ended by close()
        self.known: dict[tuple[str | None, str], KubeObject] = {}
        self.version: str | None = None  # the resourceVersion to resume from
        self.api_version: str | None = None
        self.relists = 0  # how often a 410 made the kind be listed again
        self.resumes = 0  # how often a stream that ended or dropped was resumed
        self.bookmarks = 0
        self.readable = False  # the list succeeded: there is something to watch

    def list(self) -> tuple[list[KubeObject], Inventory]:
        """The kind as it is now, and the inventory of the read (its problems, whether it was read)."""
        objects, inventory = self._take_list()
        self.api_version = self.source.api_version_of(self.request, Inventory())
        self.readable = self.request.model.KIND in inventory.read_kinds
        return objects, inventory

    def _take_list(self) -> tuple[list[KubeObject], Inventory]:
        """List the kind; what is known and the resourceVersion to watch from become the list's."""
        inventory = Inventory()
        objects = list(self.source.stream(self.request, inventory))
        self.version = self.source.list_version
        self.known = {_key(o): o for o in objects}
        return objects, inventory

    def expired(self) -> bool:
        return self.closed or (self.deadline is not None and self.clock() >= self.deadline)

    def close(self) -> None:
        """End events(): the open stream is shut at once (urllib3 2.3 and later; else it ends at
        its next event or bookmark, or when the server ends it)."""
        self.closed = True
        response = self._response
        if response is not None and hasattr(response, "shutdown"):
            try:
                response.shutdown()
            except (OSError, RuntimeError, ValueError):  # already ended and given back to the pool
                pass

    def events(self) -> Iterator[WatchEvent]:
        """Changes after the list, until the deadline (forever without one)."""
        if self.api_version is None or not self.readable:
            return
        failures, unreachable = 0, None
        while not self.expired():
            gone = False
            try:
                for raw in self._stream():
                    failures = 0
                    kind = raw.get("type") if isinstance(raw, dict) else None
                    body = raw.get("object") if isinstance(raw, dict) else None
                    if kind == "ERROR":
                        code = body.get("code") if isinstance(body, dict) else None
                        if code == 410:
                            gone = True
                            break
                        message = body.get("message") if isinstance(body, dict) else None
                        raise ApiError(f"the watch of {self.request.resource} failed: {message or body}",
                                       status=code if isinstance(code, int) else None)
                    if not isinstance(body, dict):
                        continue
                    if kind == "BOOKMARK":
                        self.bookmarks += 1
                        version = (body.get("metadata") or {}).get("resourceVersion")
                        if version:
                            self.version = version
                        if self.expired():
                            return
                        continue
                    event = self._event(kind, body)
                    if event is not None:
                        yield event
                    if self.expired():
                        return
            except ApiError as exc:
                if exc.status == 410:
                    gone = True
                elif exc.status is not None:  # refused (403, 404, 5xx): not ours to retry forever
                    raise
                else:  # unreachable: the server may be restarting
                    failures, unreachable = failures + 1, exc
                    if failures > self.resume_attempts:
                        raise ApiError(f"the watch of {self.request.resource} was lost: {exc}") from None
                    self._pause(RESUME_BACKOFF * 2 ** (failures - 1))
                    continue
            if gone:
                yield from self._relist()
            elif not self.expired():
                self.resumes += 1
        if failures:  # the time ran out while the server was away: changes then may be unseen
            raise ApiError(f"the watch of {self.request.resource} could not be resumed before its "
                           f"--request-timeout ended: {unreachable}")

    def _pause(self, seconds: float) -> None:
        if self.deadline is not None:
            seconds = min(seconds, max(0.0, self.deadline - self.clock()))
        self.sleep(seconds)

    def _stream(self) -> Iterator[dict]:
        path, first = self.source.list_request(self.request, self.api_version)
        query = [q for q in first if q[0] != "limit"]
        seconds = int(self.stream_seconds())
        if self.deadline is not None:
            seconds = max(1, min(seconds, int(self.deadline - self.clock() + 0.999)))
        query += [("resourceVersion", self.version or "0"), ("allowWatchBookmarks", "true"),
                  ("timeoutSeconds", str(seconds))]
        return self.source.session.watch(path, query, timeout=seconds + READ_SLACK, opened=self._opened)

    def _opened(self, response) -> None:
        self._response = response
        if self.closed:  # closed while the request was on its way
            self.close()

    def _event(self, kind: str | None, body: dict) -> WatchEvent | None:
        body.setdefault("apiVersion", self.api_version)
        body.setdefault("kind", self.request.model.KIND)
        version = (body.get("metadata") or {}).get("resourceVersion")
        if version:
            self.version = version
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return None
        try:
            obj = parse_object(body, self.request.keep_raw, view=self.request.view)
        except InputError as exc:
            self.warn(f"skipped invalid object in the watch of {self.request.resource}: {exc}")
            return None
        if not isinstance(obj, KubeObject):
            return None
        if self.request.keep is not None and not self.request.keep(obj):
            return None
        if kind == "DELETED":
            self.known.pop(_key(obj), None)
        else:
            self.known[_key(obj)] = obj
        return WatchEvent(kind, obj)

    def _relist(self) -> Iterator[WatchEvent]:
        """List again after a 410; what changed meanwhile, as events."""
        self.relists += 1
        before = self.known
        objects, inventory = self._take_list()
        if self.request.model.KIND not in inventory.read_kinds:
            raise ApiError(f"the watch of {self.request.resource} expired (410) and listing it again failed: "
                           + "; ".join(p.message for p in inventory.problems))
        for problem in inventory.problems:
            self.warn(problem.message)
        for key, old in before.items():  # gone, or replaced by a new object of the same name
            now = self.known.get(key)
            if now is None or now.uid != old.uid:
                yield WatchEvent("DELETED", old)
        for obj in objects:
            old = before.get(_key(obj))
            if old is None or old.uid != obj.uid:
                yield WatchEvent("ADDED", obj)
            elif old.metadata.resource_version != obj.metadata.resource_version:
                yield WatchEvent("MODIFIED", obj)
