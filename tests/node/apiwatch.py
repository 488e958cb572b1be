"""Watches on the tier's API server: every version of an object as the server stores it.

The node tier waits on what the cluster says (a pod Running, the agent's report changing) and
reads every version of the report during a fault. Polling misses versions written between two
reads and wastes time between them; a watch sees each one as it is written. A dropped stream (the
API server restarted under a fault test) is resumed from the last resourceVersion, or listed again
when that version is gone (410).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Iterator

from controlplane import ADMIN_TOKEN
from waiting import Stuck


class Watch:
    """Objects of one collection (``/api/v1/namespaces/ns/pods``), optionally one ``name``, kept
    current from a watch; ``objects`` maps name -> the latest version (a deleted one is removed)."""

    def __init__(self, plane, path: str, name: str | None = None, label_selector: str = "", describe=None):
        self.plane, self.path, self.name, self.selector = plane, path, name, label_selector
        self.describe = describe  # object -> one line, for what a stuck wait saw last
        self.objects: dict[str, dict] = {}
        self.versions: list[dict] = []  # every version of every object seen, in order
        self.version = ""
        self.changed = threading.Condition()
        self.events = 0  # how many changes arrived: a waiter's progress
        self.error: str = ""
        self._stop = threading.Event()
        self._response = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watch {path}")

    # -- life -------------------------------------------------------------------------------

    def __enter__(self) -> "Watch":
        self._list()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            try:
                response.fp.raw._sock.shutdown(socket.SHUT_RDWR)  # wake the blocked read
            except (AttributeError, OSError):
                pass
        self._thread.join(timeout=10)

    # -- the stream --------------------------------------------------------------------------

    def _query(self, **extra: str) -> str:
        query = {**extra}
        if self.name:
            query["fieldSelector"] = f"metadata.name={self.name}"
        if self.selector:
            query["labelSelector"] = self.selector
        return urllib.parse.urlencode(query)

    def _open(self, query: str, timeout: float):
        request = urllib.request.Request(f"{self.plane.url}{self.path}?{query}",
                                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        context = ssl.create_default_context(cafile=str(self.plane.ca_file))
        return urllib.request.urlopen(request, context=context, timeout=timeout)

    def _list(self) -> None:
        with self._open(self._query(), 30) as response:
            doc = json.load(response)
        objects = {o["metadata"]["name"]: o for o in doc.get("items", [])}
        self.version = doc["metadata"]["resourceVersion"]
        with self.changed:
            for name, obj in objects.items():
                if self.objects.get(name, {}).get("metadata", {}).get("resourceVersion") != \
                        obj["metadata"]["resourceVersion"]:
                    self.versions.append(obj)
                    self.events += 1
            if set(self.objects) - set(objects):
                self.events += 1
            self.objects = objects
            self.changed.notify_all()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                query = self._query(watch="1", resourceVersion=self.version, allowWatchBookmarks="true",
                                    timeoutSeconds="300")
                self._response = self._open(query, 330)
                with self._response as response:
                    for line in response:
                        if self._stop.is_set():
                            return
                        self._event(json.loads(line))
            except urllib.error.HTTPError as exc:
                self.error = f"HTTP {exc.code}"
            except (OSError, ValueError, http.client.HTTPException) as exc:
                self.error = str(exc) or type(exc).__name__  # the API server went away (a cut chunk is
                # IncompleteRead): resume once it is back
            finally:
                self._response = None
            if not self._stop.is_set():
                self._stop.wait(0.5)
                try:
                    if self.error.startswith("gone"):
                        self._list()
                        self.error = ""
                except (OSError, ValueError, KeyError) as exc:
                    self.error = str(exc)

    def _event(self, event: dict) -> None:
        kind, obj = event.get("type"), event.get("object", {})
        if kind == "ERROR":
            if obj.get("code") == 410:
                self.error = "gone: the resourceVersion expired"
                raise ValueError(self.error)
            return
        self.version = obj.get("metadata", {}).get("resourceVersion", self.version)
        if kind == "BOOKMARK":
            return
        name = obj["metadata"]["name"]
        with self.changed:
            if kind == "DELETED":
                self.objects.pop(name, None)
            else:
                self.objects[name] = obj
                self.versions.append(obj)
            self.events += 1
            self.changed.notify_all()

    # -- waiting ------------------------------------------------------------------------------

    def until(self, what: str, check: Callable[[dict[str, dict]], object], *, stall: float = 120.0,
              ceiling: float = 1800.0, detail: Callable[[], str] | None = None):
        """``check(objects)``'s first truthy value, evaluated at once and after every change. Fails
        after ``stall`` seconds without any change to the watched objects (the step is stuck)."""
        began = last = time.monotonic()
        events = -1
        with self.changed:
            while True:
                result = check(dict(self.objects))
                if result:
                    return result
                if self.events != events:
                    events, last = self.events, time.monotonic()
                now = time.monotonic()
                if now - last > stall or now - began > ceiling:
                    extra = "".join(f"\n{n}: {self.describe(o)}" for n, o in self.objects.items()) \
                        if self.describe else ""
                    extra += f"\n{detail()}" if detail is not None else ""
                    raise Stuck(f"{what}: no change for {now - last:.0f}s ({now - began:.0f}s in all; "
                                f"watch error: {self.error or 'none'}){extra}")
                self.changed.wait(timeout=min(5.0, stall))

    def iterate(self) -> Iterator[dict]:
        """Every version seen so far and from now on (for a reader that follows along)."""
        index = 0
        while not self._stop.is_set():
            with self.changed:
                while index >= len(self.versions) and not self._stop.is_set():
                    self.changed.wait(timeout=1)
                batch = self.versions[index:]
            index += len(batch)
            yield from batch
