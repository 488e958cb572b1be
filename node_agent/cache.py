"""What the agent knows of the API between scans: its node's pods, its Node and its claims, kept
current by watches, so a scan costs no request when nothing changed.

A scan reads through :class:`WatchedSource` as it would through the live source. A request with
a field selector (this node's pods, this Node, one claim by name) is answered from memory: the
first read lists it and opens a watch from the list's resourceVersion (bookmarks, a re-list on 410:
:class:`~kubectl_dra.kube.watch.KindWatch`), and every event after that updates what is held and
wakes the agent (``on_change``). Anything else (the opt-in network check's cluster-wide reads) is
listed each time, as before.

What was read and can no longer be followed is never served: when a watch fails (refused, or the
server unreachable even once), the next read lists again, and a list that fails raises, so the
scan fails and the agent keeps its last report. Watches a scan no longer reads (a claim no pod on
the node uses any more) are closed by :meth:`WatchedSource.sweep` after each scan.
"""

from __future__ import annotations

import random
import threading
from typing import Callable, Iterable

from kubectl_dra.errors import ApiError
from kubectl_dra.kube.live import LiveSource
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.kube.watch import KindWatch
from kubectl_dra.model.base import KubeObject
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.registry import invalid_field_problems


def _request_key(request: ReadRequest) -> tuple:
    return request.model.KIND, request.namespace, request.field_selector, request.label_selector


class _Watched:
    """One request's objects, listed once and then followed by a watch in a daemon thread."""

    def __init__(self, source: LiveSource, request: ReadRequest, on_change: Callable[[], None],
                 stream_seconds: Callable[[], float], follow: bool = True):
        self.request, self.on_change, self.follow = request, on_change, follow
        self.watch = KindWatch(source, request, resume_attempts=0, stream_seconds=stream_seconds,
                               warn=self._invalid)
        self.lock = threading.Lock()
        # the objects as the events leave them (KindWatch.known changes inside its generator, in
        # the watch's thread, where no lock of the scan's can guard it)
        self.objects: dict[tuple[str | None, str], KubeObject] = {}
        # per object, the fields that did not validate: said with every read, as a list says them
        self.problems: dict[tuple[str | None, str], list[str]] = {}
        self.failure: str | None = None  # why what is held can no longer be followed
        self.refused: str | None = None  # the server refused the watch itself (403: a ClusterRole without it)
        self.following = False

    def list(self, into: Inventory) -> None:
        """List now (in the caller's thread: a failure raises there) into ``into``, and start
        following."""
        objects, inventory = self.watch.list()
        with self.lock:
            self.objects = {(o.namespace, o.name): o for o in objects}
            self.problems = {key: invalid_field_problems(o) for key, o in self.objects.items() if o.invalid_fields}
            self.failure = None
        into.extend(objects)
        into.problems.extend(inventory.problems)
        into.read_kinds |= inventory.read_kinds
        held = {message for messages in self.problems.values() for message in messages}
        # an object the list had to skip has no state to follow: such a read is listed every time
        skipped = any(p.message not in held for p in inventory.problems)
        if self.follow and self.watch.readable and not self.watch.closed and not skipped:
            self.following = True
            threading.Thread(target=self._follow, name=f"watch {self.request.resource}", daemon=True).start()

    def add_to(self, into: Inventory) -> None:
        """What is held, into the scan's inventory, as a list would have put it there."""
        with self.lock:
            into.extend(list(self.objects.values()))
            for key in sorted(self.problems, key=lambda k: (k[0] or "", k[1])):
                for message in self.problems[key]:
                    into.problem(message, kind=self.request.model.KIND)
        into.read_kinds.add(self.request.model.KIND)

    def current(self) -> bool:
        with self.lock:
            return self.following and self.failure is None

    def close(self) -> None:
        self.watch.close()

    def _invalid(self, message: str) -> None:
        # an object changed into one that does not validate: what is held of it is out of date,
        # and a fresh list says so the way a first read does; a change, so the agent rescans now
        self._fail(message, wake=True)

    def _fail(self, message: str, wake: bool = False) -> None:
        """Stop serving what is held. A failure does not wake the agent: the next scan lists again
        at the interval (or the loop's backoff), so a watch that keeps failing never drives
        requests faster than that."""
        with self.lock:
            if self.failure is None:
                self.failure = message
        self.watch.close()
        if wake:
            self.on_change()

    def _follow(self) -> None:
        try:
            for event in self.watch.events():
                if self.watch.closed:
                    return
                key = (event.object.namespace, event.object.name)
                with self.lock:
                    self.problems.pop(key, None)
                    if event.type == "DELETED":
                        self.objects.pop(key, None)
                    else:
                        self.objects[key] = event.object
                        if event.object.invalid_fields:
                            self.problems[key] = invalid_field_problems(event.object)
                self.on_change()
        except ApiError as exc:
            if exc.status in (403, 404, 405):
                self.refused = str(exc)
            if not self.watch.closed:
                self._fail(str(exc))
        except Exception as exc:  # noqa: BLE001 - a thread must not die silently and leave the cache "current"
            self._fail(f"internal: {type(exc).__name__}: {exc}")
        finally:
            with self.lock:
                self.following = False


class WatchedSource:
    """A live source whose narrow reads are served from watches (see the module docstring)."""

    def __init__(self, source: LiveSource, on_change: Callable[[], None] = lambda: None, *,
                 stream_seconds: float = 300.0, warn: Callable[[str], None] = lambda message: None):
        self.source, self.on_change, self.warn = source, on_change, warn
        # client-go's reflector asks for 5 to 10 minutes per stream: reconnects spread out
        self.stream_seconds = lambda: random.uniform(stream_seconds, 2 * stream_seconds)
        self.lock = threading.Lock()  # the scan reads and sweeps; shutdown closes from another thread
        self.closed = False
        self.watched: dict[tuple, _Watched] = {}
        self.used: set[tuple] = set()
        self.lists = 0  # lists made (first reads and re-lists after a failure)

    @property
    def description(self) -> str:
        return self.source.description

    @property
    def session(self):
        return self.source.session

    def read(self, requests: Iterable[ReadRequest], into: Inventory | None = None) -> Inventory:
        inventory = into if into is not None else Inventory()
        for request in requests:
            if request.field_selector is None:
                self.source.read([request], inventory)
                continue
            key = _request_key(request)
            with self.lock:
                self.used.add(key)
                watched = self.watched.get(key)
            if watched is not None and watched.current():
                watched.add_to(inventory)
            else:
                follow = not self.closed
                if watched is not None:
                    watched.close()
                    if watched.refused or not watched.follow:  # listed at every scan, as before watches
                        follow = False
                        if watched.refused:
                            self.warn(f"cannot watch {request.resource} ({watched.refused}): listing it at every "
                                      "scan instead (the ClusterRole of manifests/agent/rbac.yaml grants watch)")
                watched = _Watched(self.source, request, self.on_change, self.stream_seconds, follow=follow)
                with self.lock:
                    self.watched[key] = watched
                self.lists += 1
                watched.list(inventory)
        return inventory

    def sweep(self) -> int:
        """Close the watches no read used since the last sweep; returns how many were closed."""
        with self.lock:
            gone = [self.watched.pop(key) for key in list(self.watched) if key not in self.used]
            self.used = set()
        for watched in gone:
            watched.close()
        return len(gone)

    def close(self) -> None:
        """End every watch (the agent shuts down); a read after this lists without watching."""
        with self.lock:
            self.closed = True
            gone, self.watched = list(self.watched.values()), {}
        for watched in gone:
            watched.close()

    def open_watches(self) -> int:
        with self.lock:
            return sum(w.current() for w in self.watched.values())
