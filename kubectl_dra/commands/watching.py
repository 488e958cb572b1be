"""``-w/--watch`` as ``kubectl get -w`` does it: the list first, then one row per change.

What is printed, per output format (every line flushed as it is written):

* table / wide: the table as without ``-w``, then each change as one row (no header again; with
  an empty list the header comes with the first row); each row is aligned on its own, as
  kubectl's. ``--output-watch-events`` adds a first EVENT column (ADDED, MODIFIED, DELETED).
* json: one compact JSON document per line (JSON Lines): the row's object, or
  ``{"type": ..., "object": ...}`` with ``--output-watch-events``; the list's items come first,
  one per line, as kubectl prints the items of its list.
* yaml: one YAML document per object, separated by ``---``.
* name: ``kind/name`` per change.

A deleted object is printed as kubectl prints it: its row as last seen. The watch ends with exit 0
when ``--request-timeout`` elapses (the whole watch; without it it runs until Ctrl-C) and on
Ctrl-C (kubectl exits 1 there, but 1 is this tool's "divergence or eviction" code; a watch the
user ends has found nothing wrong); with 4 when something could not be read along the way
(stderr says what).
"""


from __future__ import annotations

import json
import queue
import threading
from typing import Callable, Hashable

from kubectl_dra.errors import ApiError
from kubectl_dra.exitcodes import ExitStatus
from kubectl_dra.printers.documents import _JSON_UNSAFE, to_yaml
from kubectl_dra.printers.problems import problem_lines


def deadline(opened) -> float | None:
    """When the watch ends: ``--request-timeout`` after it starts (kubectl's watch request ends
    then); None: at Ctrl-C."""
    session = opened.source.session
    return session.clock() + session.budget if session.budget else None


def json_line(document: dict) -> str:
    """One document on one line (JSON Lines), escaped as ``-o json`` is."""
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return (_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _JSON_UNSAFE.search(text) else text) + "\n"


class RowStream:
    """Prints watch output as it comes: documents (json/yaml/name) or table rows, whose header is
    printed once, above the first row (never with --no-headers)."""

    def __init__(self, env, output, events: bool):
        self.env, self.output, self.events = env, output, events
        self.header_done = output.no_headers
        self.documents = 0
        self.status = ExitStatus.OK
        self.said: set[str] = set()

    def table(self, render: Callable[[bool, list[str] | None], str], types: list[str]) -> None:
        """``render(no_headers, events)`` makes the rows (a header first when asked)."""
        text = render(self.header_done, types if self.events else None)
        if text:
            self.header_done = True
            self.write(text)

    def document(self, kind: str, document: dict) -> None:
        body = {"type": kind, "object": document} if self.events else document
        if self.output.format == "json":
            self.write(json_line(body), encoded=True)
        else:
            self.write(("---\n" if self.documents else "") + to_yaml(body), encoded=True)
        self.documents += 1

    def write(self, text: str, encoded: bool = False) -> None:
        self.env.write(text, encoded=encoded)
        self.env.stdout.flush()  # `-w | head`: a reader that has gone ends the run here (kubectl_dra.streams)

    def problems(self, inventory) -> None:
        """The problems of a read, each said once for the whole watch (a forbidden kind is
        re-read on every event); any error-level one makes the exit 4."""
        for line in problem_lines(inventory):
            if line not in self.said:
                self.said.add(line)
                self.env.error(line)
        if any(p.severity == "error" for p in inventory.problems):
            self.status = ExitStatus.PARTIAL
        self.env.stderr.flush()

    def error(self, message: str) -> None:
        self.env.error(f"error: {message}")
        self.env.stderr.flush()
        self.status = ExitStatus.PARTIAL


def run(body: Callable[[], int]) -> int:
    """A watch command's body. A closed pipe ends it quietly, as SIGPIPE ends kubectl's: the guarded
    stdout raises OutputError at the first row after, and the program's edge exits 141."""
    return body()


def follow(stream: RowStream, events, handle: Callable) -> ExitStatus:
    """Feed each event to ``handle`` until the watch ends: at its deadline, on Ctrl-C (exit 0),
    or when the server refuses it or stays away (said on stderr, exit 4)."""
    try:
        for event in events:
            handle(event)
    except KeyboardInterrupt:
        pass
    except ApiError as exc:
        stream.error(str(exc))
    return stream.status


def changes(shown: dict[Hashable, object], current: dict[Hashable, object]) -> list[tuple[str, object]]:
    """What a view whose rows are computed anew on each change tells: ADDED and MODIFIED rows in
    ``current``'s order, then DELETED ones as last shown (rows keyed by what they are about)."""
    changed = [("MODIFIED" if key in shown else "ADDED", row) for key, row in current.items()
               if key not in shown or shown[key] != row]
    return changed + [("DELETED", row) for key, row in shown.items() if key not in current]


def merged(watches, timeout_check: Callable[[], bool]):
    """The events of several watches as one stream, in arrival order, in batches (what arrived
    together is one batch, so a burst is read and shown once). Each watch runs in a daemon
    thread; the main thread waits in short steps so that Ctrl-C reaches it."""
    inbox: queue.Queue = queue.Queue()
    done = object()

    def run(watch):
        try:
            for event in watch.events():
                inbox.put(event)
        except Exception as exc:  # noqa: BLE001 - handed to the main thread, which reports it
            inbox.put(exc)
        inbox.put(done)

    for watch in watches:
        threading.Thread(target=run, args=(watch,), name=f"watch-{watch.request.model.KIND}", daemon=True).start()
    running = len(watches)
    while running:
        try:
            first = inbox.get(timeout=0.2)
        except queue.Empty:
            if timeout_check():
                return
            continue
        batch = [first]
        while True:
            try:
                batch.append(inbox.get_nowait())
            except queue.Empty:
                break
        events = []
        for item in batch:
            if item is done:
                running -= 1
            elif isinstance(item, Exception):
                raise item
            else:
                events.append(item)
        if events:
            yield events
