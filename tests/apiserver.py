"""A fake Kubernetes API server, kept only for what a real one will not do on demand.

Everything a real API server does is tested against a real one (kube-apiserver v1.37.2 and
friends, tests/cluster/). This server remains for the faults and situations a real server cannot
be made to produce when a test wants them: injected 401/403/429/5xx answers and Retry-After, a
continue token that expires between pages (410), hangs past a timeout, going away and coming back
on the same address, and serving only older API versions (a 1.36 cluster: resource.k8s.io/v1beta1
and scheduling.k8s.io/v1alpha2, which the 1.37 server no longer offers). It speaks real HTTP to
the real ``kubernetes`` client.

Decision: kmock 0.8 is not used; this module is a small stdlib server
(``http.server.ThreadingHTTPServer`` in a daemon thread) instead. kmock is an aiohttp/asyncio
server whose emulator state sits behind an ``asyncio.Lock`` and whose auto-loaded pytest plugin
is async-only (it imports ``pytest_asyncio``, which kmock does not declare; with kmock installed
and no pytest-asyncio, pytest did not start at all); serving our synchronous urllib3 client would
need a private event loop in a thread plus cross-thread calls for every ``add``/``fail``/
inspection. Its ``KubernetesEmulator`` has no ``limit``/``continue`` pagination and no label or
field selectors, answers lists without ``kind``/``apiVersion`` and with a placeholder
resourceVersion, keys objects by group *and version* (so it cannot serve one fixture under a
chosen version), and picks ``preferredVersion`` from an unordered set. Its error
bodies carry non-Kubernetes reasons ("Object Not Found") and it has no expired-continue (410
Expired) or Retry-After behaviour, so filling those gaps means overriding most of its handlers,
which is more glue than the server below.

What it does: discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/{g}``, ``/apis/{g}/{v}``,
``/version``), list with label/field selectors and ``limit``/``continue`` pagination, get,
create/replace/patch/delete (merge, strategic-as-merge, JSON patch, apply-as-merge), a
``?watch=1`` stream (initial ADDED events, then live events until ``timeoutSeconds`` or
``watch_timeout``; BOOKMARK events on :meth:`FakeAPIServer.bookmark` for watches that allow them;
410 for a resourceVersion older than :meth:`FakeAPIServer.compact`, as an ERROR event in the
stream as kube-apiserver sends it; :meth:`FakeAPIServer.drop_watches` cuts every open stream
mid-way), injected errors (:meth:`FakeAPIServer.fail`,
:meth:`FakeAPIServer.expire_continue_tokens`) and a request log. Objects are stored per
(group, plural) and served under any served version with ``apiVersion`` rewritten, no conversion.
"""

from __future__ import annotations

import base64
import bisect
import datetime
import json
import random
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["FakeAPIServer", "Recorded", "ResourceType", "Route", "Headers", "parse_path", "KNOWN_RESOURCES"]


# --------------------------------------------------------------------------------------------
# Resource table


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for core
    kind: str
    plural: str
    namespaced: bool
    versions: tuple[str, ...]
    status: bool = False  # has a /status subresource (PUT/PATCH on the main resource keep status)
    short_names: tuple[str, ...] = ()

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """``resourceclaims.resource.k8s.io``; ``pods`` for core."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


_DRA = ("v1", "v1beta2", "v1beta1")
_PODGROUP = ("v1beta1", "v1alpha3", "v1alpha2")

KNOWN_RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "Pod", "pods", True, ("v1",), status=True, short_names=("po",)),
    ResourceType("", "Node", "nodes", False, ("v1",), status=True, short_names=("no",)),
    ResourceType("", "Namespace", "namespaces", False, ("v1",), status=True, short_names=("ns",)),
    ResourceType("", "Event", "events", True, ("v1",), short_names=("ev",)),
    ResourceType("apps", "Deployment", "deployments", True, ("v1",), status=True, short_names=("deploy",)),
    ResourceType("apps", "ReplicaSet", "replicasets", True, ("v1",), status=True, short_names=("rs",)),
    ResourceType("apps", "StatefulSet", "statefulsets", True, ("v1",), status=True, short_names=("sts",)),
    ResourceType("batch", "Job", "jobs", True, ("v1",), status=True),
    ResourceType("events.k8s.io", "Event", "events", True, ("v1",), short_names=("ev",)),
    ResourceType("resource.k8s.io", "ResourceClaim", "resourceclaims", True, _DRA, status=True),
    ResourceType("resource.k8s.io", "ResourceClaimTemplate", "resourceclaimtemplates", True, _DRA),
    ResourceType("resource.k8s.io", "ResourceSlice", "resourceslices", False, _DRA),
    ResourceType("resource.k8s.io", "DeviceClass", "deviceclasses", False, _DRA),
    ResourceType("scheduling.k8s.io", "PodGroup", "podgroups", True, _PODGROUP, status=True),
    ResourceType("scheduling.k8s.io", "PriorityClass", "priorityclasses", False, ("v1",), short_names=("pc",)),
    ResourceType("karpenter.sh", "NodePool", "nodepools", False, ("v1",), status=True),
    ResourceType("karpenter.sh", "NodeClaim", "nodeclaims", False, ("v1",), status=True),
    ResourceType("karpenter.sh", "NodeOverlay", "nodeoverlays", False, ("v1alpha1",), status=True),
    ResourceType("kubectl-dra.io", "NodeEnforcementReport", "nodeenforcementreports", False,
                 ("v1alpha1",), status=True),
)

# Built-in groups a real cluster always has, plus the DRA/scheduling defaults of the brief.
DEFAULT_SERVED: dict[str, tuple[str, ...]] = {
    "": ("v1",),
    "apps": ("v1",),
    "batch": ("v1",),
    "events.k8s.io": ("v1",),
    "resource.k8s.io": ("v1",),
    "scheduling.k8s.io": ("v1beta1",),
}

_GROUP_ORDER = ("", "apps", "events.k8s.io", "batch", "scheduling.k8s.io", "resource.k8s.io")

_META_FIELDS = ("metadata.name", "metadata.namespace")
# Field labels the real apiserver accepts per resource (everything else is a 400).
FIELD_LABELS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "pods"): ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                   "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
    ("", "nodes"): ("spec.unschedulable",),
    ("", "namespaces"): ("status.phase",),
    ("", "events"): ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                     "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"),
    ("events.k8s.io", "events"): ("regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                                  "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
                                  "reason", "reportingController", "type"),
    ("resource.k8s.io", "resourceslices"): ("spec.nodeName", "spec.driver", "spec.pool.name"),
}

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple:
    """Sort key in Kubernetes order: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > anything else."""
    m = _VERSION_RE.match(version)
    if not m:
        return (3, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, version)


# --------------------------------------------------------------------------------------------
# Requests


@dataclass(frozen=True)
class Route:
    group: str
    version: str | None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


def parse_path(path: str) -> Route | None:
    """Split an API path into its parts; ``None`` if it is not under ``/api`` or ``/apis``."""
    parts = [unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) == 2 and parts[0] == "apis":
        return Route(parts[1], None)
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return Route(group, version)
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    return Route(group, version, rest[0], namespace, rest[1] if len(rest) > 1 else None,
                 "/".join(rest[2:]) or None)


class Headers(dict):
    """A dict of request headers with case-insensitive lookups (keys stored lower-case)."""

    def __init__(self, items: Iterable[tuple[str, str]] = ()):
        items = list(items)
        super().__init__((k.lower(), v) for k, v in items)
        self.lines = items  # every header line as sent, repeats included

    def get_all(self, key: str) -> list[str]:
        """Every value of a repeated header (e.g. one Impersonate-Group line per group)."""
        return [v for k, v in self.lines if k.lower() == key.lower()]

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # a Headers: case-insensitive lookups
    body: Any = None  # decoded JSON (or text) of a write; None for GETs

    @property
    def route(self) -> Route | None:
        return parse_path(self.path)

    @property
    def resource(self) -> str | None:
        route = self.route
        return route.plural if route else None

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch", "").lower() in ("1", "true")

    @property
    def is_list(self) -> bool:
        route = self.route
        return (self.method == "GET" and route is not None and route.plural is not None
                and route.name is None and not self.is_watch)


def _matches_resource(route: Route | None, resource: str | None) -> bool:
    if resource is None:
        return True
    if route is None or route.plural is None:
        return False
    plural, _, group = resource.partition(".")
    if plural != route.plural:
        return False
    return not group or group == route.group


# --------------------------------------------------------------------------------------------
# Errors

_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
    500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}


def status_doc(code: int, reason: str, message: str, details: dict | None = None,
               metadata: dict | None = None) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {}, "status": "Failure",
            "message": message, "reason": reason, "details": details or {}, "code": code}


class _Reply(Exception):
    def __init__(self, code: int, body: Any, headers: dict[str, str] | None = None):
        super().__init__(code)
        self.code, self.body, self.headers = code, body, headers or {}


def _error(code: int, message: str, reason: str | None = None, details: dict | None = None,
           metadata: dict | None = None, headers: dict | None = None) -> _Reply:
    return _Reply(code, status_doc(code, reason or _REASONS.get(code, "Unknown"), message, details, metadata),
                  headers)


def _not_found_route() -> _Reply:
    return _error(404, "the server could not find the requested resource")


@dataclass
class _Failure:
    status: int
    resource: str | None
    method: str | None
    times: int | None
    retry_after: int | float | None
    body_reason: str | None
    watch: bool | None = None  # True: only watch requests; False: never them; None: either
    raw: bytes | None = None  # a body sent as it is, with status 200: no Status object


# --------------------------------------------------------------------------------------------
# Selectors

_LABEL_KEY = r"[A-Za-z0-9_./-]+"
_LABEL_VALUE = r"[A-Za-z0-9_.-]*"
_RE_NOT_EXISTS = re.compile(rf"^!\s*({_LABEL_KEY})$")
_RE_SET = re.compile(rf"^({_LABEL_KEY})\s+(in|notin)\s+\(([^()]*)\)$")
_RE_EQ = re.compile(rf"^({_LABEL_KEY})\s*(==|=|!=|>|<)\s*({_LABEL_VALUE})$")
_RE_EXISTS = re.compile(rf"^({_LABEL_KEY})$")


def _split_commas(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def parse_label_selector(text: str) -> Callable[[dict], bool]:
    reqs: list[Callable[[dict], bool]] = []
    for raw in _split_commas(text):
        part = raw.strip()
        if not part:
            continue
        if m := _RE_NOT_EXISTS.match(part):
            reqs.append(lambda labels, k=m.group(1): k not in labels)
        elif m := _RE_SET.match(part):
            key, op = m.group(1), m.group(2)
            values = {v.strip() for v in m.group(3).split(",")}
            if op == "in":
                reqs.append(lambda labels, k=key, vs=values: k in labels and labels[k] in vs)
            else:
                reqs.append(lambda labels, k=key, vs=values: k not in labels or labels[k] not in vs)
        elif m := _RE_EQ.match(part):
            key, op, value = m.groups()
            if op in ("=", "=="):
                reqs.append(lambda labels, k=key, v=value: labels.get(k) == v)
            elif op == "!=":
                reqs.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                try:
                    bound = int(value)
                except ValueError:
                    raise _error(400, f"unable to parse requirement: for 'gt', 'lt' operators, "
                                      f"the value must be an integer: {part!r}") from None
                gt = op == ">"
                reqs.append(lambda labels, k=key, b=bound, gt=gt: k in labels and labels[k].lstrip("-").isdigit()
                            and (int(labels[k]) > b if gt else int(labels[k]) < b))
        elif m := _RE_EXISTS.match(part):
            reqs.append(lambda labels, k=m.group(1): k in labels)
        else:
            raise _error(400, f"unable to parse requirement: found {part!r}, expected: a label selector")
    return lambda labels: all(r(labels) for r in reqs)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, escaped = [], "", False
    for ch in text:
        if escaped:
            current += "\\" + ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _field_value(obj: dict, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


# field labels a release selects on only from its minor on (pkg/registry/resource/resourceslice at v1.37.2)
FIELD_LABELS_SINCE = {("resource.k8s.io", "resourceslices", "spec.pool.name"): 37}


def parse_field_selector(text: str, rt: ResourceType, minor: int = 37) -> Callable[[dict], bool]:
    allowed = _META_FIELDS + tuple(f for f in FIELD_LABELS.get((rt.group, rt.plural), ())
                                   if minor >= FIELD_LABELS_SINCE.get((rt.group, rt.plural, f), 0))
    reqs: list[Callable[[dict], bool]] = []
    for raw in _split_unescaped(text, ","):
        part = raw.strip()
        if not part:
            continue
        m = re.match(r"^([^=!]+?)\s*(!=|==|=)(.*)$", part)
        if not m:
            raise _error(400, f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3).strip())
        if field not in allowed:
            raise _error(400, f'field label not supported: {field}')
        if op == "!=":
            reqs.append(lambda o, f=field, v=value: _field_value(o, f) != v)
        else:
            reqs.append(lambda o, f=field, v=value: _field_value(o, f) == v)
    return lambda obj: all(r(obj) for r in reqs)


# --------------------------------------------------------------------------------------------
# Patches


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _error(422, f"invalid JSON pointer {path!r}", "Invalid")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, list):
            doc = doc[int(part)]
        elif isinstance(doc, dict):
            doc = doc[part]
        else:
            raise KeyError(part)
    return doc


def json_patch(doc: Any, ops: list) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    doc = json.loads(json.dumps(doc))
    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind in ("move", "copy"):
                src = _pointer(op["from"])
                value = json.loads(json.dumps(_walk(doc, src)))
                if kind == "move":
                    doc = _json_remove(doc, src)
                doc = _json_add(doc, parts, value)
            elif kind == "add":
                doc = _json_add(doc, parts, op["value"])
            elif kind == "remove":
                doc = _json_remove(doc, parts)
            elif kind == "replace":
                doc = _json_remove(doc, parts)
                doc = _json_add(doc, parts, op["value"])
            elif kind == "test":
                if _walk(doc, parts) != op["value"]:
                    raise _error(422, f"testing value {op['path']} failed", "Invalid")
            else:
                raise _error(422, f"Unexpected kind: {kind}", "Invalid")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise _error(422, f"the server rejected our request due to an error in our request: {exc!r}",
                         "Invalid") from None
    return doc


def _json_add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise KeyError(last)
    return doc


def _json_remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return None
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        del parent[int(last)]
    else:
        del parent[last]
    return doc


# --------------------------------------------------------------------------------------------
# The server


def _copy(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _gv(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


_Key = tuple[str, str]  # (namespace or "", name)


class _Watch:
    def __init__(self, events: Iterable[dict], follow: Callable[[], Iterator[dict]]):
        self.events, self.follow = events, follow


_DROP = {"type": "__drop__"}  # follow() yields it when the stream is to be cut without its end


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: avoid 40 ms delayed-ACK stalls
    server_version = "fake-kube-apiserver"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def setup(self) -> None:
        super().setup()
        self.server.fake._connection_opened(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._connection_closed(self.connection)  # type: ignore[attr-defined]

    def _dispatch(self) -> None:
        self.server.fake._dispatch(self)  # type: ignore[attr-defined]

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up mid-request is not news; bugs in handlers land in FakeAPIServer.errors


class FakeAPIServer:
    """An in-memory Kubernetes API server on 127.0.0.1, for the real client over HTTP."""

    def __init__(self, objects: Iterable[dict] = (), served: dict[str, Iterable[str]] | None = None, *,
                 token: str | None = None):
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._types: dict[tuple[str, str], ResourceType] = {(t.group, t.plural): t for t in KNOWN_RESOURCES}
        self._store: dict[tuple[str, str], dict[_Key, dict]] = {}
        self._object_versions: dict[str, set[str]] = {}
        self._served: dict[str, list[str]] = {}
        for group, versions in (served or {}).items():
            self._served["" if group in ("core", "") else group] = list(versions)
        self._rv = 1000
        self._events: list[tuple[int, tuple[str, str], str, dict]] = []
        self._failures: list[_Failure] = []
        self._expire_continue = 0
        self._compacted = 0  # watches from an older resourceVersion get 410 Gone
        self._drops = 0  # drop_watches() calls: a stream opened before the last one is cut
        self._key_cache: dict = {}
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._stopping = False
        self._url: str | None = None

        self.requests: list[Recorded] = []
        self.errors: list[str] = []  # tracebacks of bugs in this server (not injected failures)
        self.page_size_cap: int | None = None
        self.token = token  # if set, requests without "Authorization: Bearer <token>" get 401
        self.user = "x"  # the user named in 403 messages
        self.watch_timeout = 2.0  # a watch stream ends after at most this many seconds
        self.server_version = {"major": "1", "minor": "37", "gitVersion": "v1.37.2",
                               "gitCommit": "0" * 40, "gitTreeState": "clean",
                               "buildDate": "2025-08-27T00:00:00Z", "goVersion": "go1.24.6",
                               "compiler": "gc", "platform": "linux/amd64"}
        for obj in objects:
            self.add(obj)

    # ---- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("FakeAPIServer is not started")
        return self._url

    def start(self, port: int | None = None) -> "FakeAPIServer":
        """Start serving; a stopped server comes back on its old port (an API server outage)."""
        if self._httpd is not None:
            return self
        if port is None and self._url is not None:
            port = int(self._url.rsplit(":", 1)[1])
        httpd = _HTTPServer(("127.0.0.1", port or 0), _Handler)
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._stopping = False
        self._url = f"http://127.0.0.1:{httpd.server_address[1]}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-apiserver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeAPIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _connection_opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _connection_closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    # ---- state -----------------------------------------------------------------------------

    def register(self, group: str, version: str, kind: str, plural: str, namespaced: bool,
                 status: bool = False) -> ResourceType:
        """Teach the server a resource it does not know (a CRD); known ones gain ``version``."""
        with self._lock:
            for rt in self._types.values():
                if rt.group == group and rt.kind == kind:
                    if version not in rt.versions:
                        rt = ResourceType(rt.group, rt.kind, rt.plural, rt.namespaced,
                                          rt.versions + (version,), rt.status, rt.short_names)
                        self._types[(group, rt.plural)] = rt
                    return rt
            rt = ResourceType(group, kind, plural, namespaced, (version,), status)
            self._types[(group, plural)] = rt
            return rt

    def serve(self, group: str, versions: Iterable[str]) -> None:
        """Override which versions of ``group`` are served (``[]`` hides the group)."""
        with self._lock:
            self._served["" if group == "core" else group] = list(versions)

    def add(self, obj: dict) -> dict:
        """Store a full object (apiVersion/kind/metadata); returns the stored copy."""
        obj = _copy(obj)
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise ValueError(f"object without apiVersion/kind: {obj!r}")
        group, version = _split_api_version(api_version)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            raise ValueError(f"object without metadata.name: {obj!r}")
        with self._lock:
            rt = self._type_for_kind(group, kind)
            if rt is None:
                rt = self.register(group, version, kind, kind.lower() + "s", bool(meta.get("namespace")))
            if rt.namespaced:
                meta.setdefault("namespace", "default")
            else:
                meta.pop("namespace", None)
            self._object_versions.setdefault(group, set()).add(version)
            key = (meta.get("namespace") or "", meta["name"])
            store = self._store.setdefault((rt.group, rt.plural), {})
            existing = store.get(key)
            self._stamp(obj, existing, keep_rv=True)
            store[key] = obj
            self._event("MODIFIED" if existing else "ADDED", rt, obj)
            return _copy(obj)

    def remove(self, resource: str, name: str, namespace: str | None = None) -> None:
        """Delete a stored object at once (finalizers ignored), with its DELETED event."""
        with self._lock:
            rt = self._resolve_name(resource)
            store = self._store.get((rt.group, rt.plural), {})
            old = store.pop(self._key(rt, namespace, name))
            self._next_rv()
            old["metadata"]["resourceVersion"] = str(self._rv)
            self._event("DELETED", rt, old)

    def get(self, resource: str, name: str, namespace: str | None = None) -> dict | None:
        """The stored object (as added/written, apiVersion as stored) or None."""
        with self._lock:
            rt = self._resolve_name(resource)
            obj = self._store.get((rt.group, rt.plural), {}).get(self._key(rt, namespace, name))
            return _copy(obj) if obj is not None else None

    def items(self, resource: str, namespace: str | None = None) -> list[dict]:
        """Every stored object of a resource (``pods``, ``events.events.k8s.io``, ...), sorted."""
        with self._lock:
            rt = self._resolve_name(resource)
            store = self._store.get((rt.group, rt.plural), {})
            return [_copy(store[k]) for k in sorted(store) if namespace is None or k[0] == namespace]

    def served_versions(self, group: str) -> list[str]:
        with self._lock:
            if group in self._served:
                versions = set(self._served[group])
            else:
                versions = set(DEFAULT_SERVED.get(group, ())) | self._object_versions.get(group, set())
            return sorted(versions, key=version_priority)

    def _groups(self) -> list[str]:
        with self._lock:
            names = {rt.group for rt in self._types.values()} | set(self._served)
            served = [g for g in names if g and self.served_versions(g)]
        known = [g for g in _GROUP_ORDER if g in served]
        return known + sorted(g for g in served if g not in known)

    def _resources_in(self, group: str, version: str) -> list[ResourceType]:
        if version not in self.served_versions(group):
            return []
        types = [rt for rt in self._types.values() if rt.group == group]
        known_versions = {v for rt in types for v in rt.versions}
        return [rt for rt in types if version in rt.versions or version not in known_versions]

    def _type_for_kind(self, group: str, kind: str) -> ResourceType | None:
        return next((rt for rt in self._types.values() if rt.group == group and rt.kind == kind), None)

    def _resolve_name(self, resource: str) -> ResourceType:
        plural, _, group = resource.partition(".")
        candidates = [rt for rt in self._types.values()
                      if rt.plural == plural and (not group or rt.group == group)]
        if not candidates:
            raise KeyError(resource)
        return sorted(candidates, key=lambda rt: rt.group != "")[0]

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _stamp(self, obj: dict, existing: dict | None, keep_rv: bool = False) -> None:
        meta = obj.setdefault("metadata", {})
        old = (existing or {}).get("metadata", {})
        meta["uid"] = old.get("uid") or meta.get("uid") or str(uuid.uuid4())
        meta["creationTimestamp"] = old.get("creationTimestamp") or meta.get("creationTimestamp") or _now()
        if not (keep_rv and meta.get("resourceVersion")):
            meta["resourceVersion"] = self._next_rv()
        else:
            self._rv = max(self._rv, int(meta["resourceVersion"])) if str(meta["resourceVersion"]).isdigit() \
                else self._rv

    def _event(self, kind: str, rt: ResourceType, obj: dict) -> None:
        self._events.append((self._rv, (rt.group, rt.plural), kind, _copy(obj)))
        self._cond.notify_all()

    # ---- failures --------------------------------------------------------------------------

    def fail(self, status: int, *, resource: str | None = None, method: str | None = "GET",
             times: int | None = None, retry_after: int | float | None = None,
             body_reason: str | None = None, watch: bool | None = None, raw: bytes | None = None) -> None:
        """Answer matching requests with an error Status.

        ``resource``: a plural (``resourceclaims``) or ``plural.group``; None matches every path,
        discovery included. ``method``: an HTTP method, or None/"*" for any. ``times``: how many
        matching requests fail (None = all). ``retry_after`` sets the Retry-After header and
        ``details.retryAfterSeconds``; ``body_reason`` overrides the Status reason. ``watch``: True
        fails only watch requests (a ClusterRole with list and without watch), False only others.
        ``raw``: answer with these bytes as JSON (the status is then the reply's), for a body no
        encoder here would write (a document nested beyond the recursion limit).
        """
        with self._lock:
            self._failures.append(_Failure(status, resource, None if method in (None, "*") else method.upper(),
                                           times, retry_after, body_reason, watch, raw))

    def clear_failures(self) -> None:
        with self._lock:
            self._failures.clear()
            self._expire_continue = 0

    def expire_continue_tokens(self, times: int = 1) -> None:
        """The next ``times`` requests carrying ``continue`` get 410 Expired, like a compacted etcd."""
        with self._lock:
            self._expire_continue += times

    def compact(self) -> None:
        """Forget the history so far, as etcd compaction does: a watch from an older
        resourceVersion gets 410 Gone (an ERROR event, then the end of the stream)."""
        with self._cond:
            self._compacted = self._rv
            self._cond.notify_all()

    def bookmark(self) -> None:
        """A BOOKMARK event (the current resourceVersion) to every watch that allows them."""
        with self._cond:
            self._events.append((self._rv, ("", "__bookmark__"), "BOOKMARK", {}))
            self._cond.notify_all()

    def drop_watches(self) -> None:
        """Cut every open watch stream mid-way (no closing chunk), as a lost connection does."""
        with self._cond:
            self._drops += 1
            self._cond.notify_all()

    def watch_requests(self, resource: str | None = None) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.is_watch and _matches_resource(r.route, resource)]

    def list_requests(self, resource: str | None = None) -> list[Recorded]:
        """Collection GETs (lists, not watches), optionally for one resource (plural or plural.group)."""
        with self._lock:
            return [r for r in self.requests if r.is_list and _matches_resource(r.route, resource)]

    def _injected(self, rec: Recorded, route: Route | None, rt: ResourceType | None) -> _Reply | None:
        with self._lock:
            for failure in self._failures:
                if failure.method is not None and failure.method != rec.method:
                    continue
                if not _matches_resource(route, failure.resource):
                    continue
                if failure.watch is not None and failure.watch != rec.is_watch:
                    continue
                if failure.times is not None:
                    failure.times -= 1
                    if failure.times <= 0:
                        self._failures.remove(failure)
                break
            else:
                return None
        return self._failure_reply(failure, rec, route, rt)

    def _failure_reply(self, failure: _Failure, rec: Recorded, route: Route | None,
                       rt: ResourceType | None) -> _Reply:
        code = failure.status
        if failure.raw is not None:
            return _Reply(code, failure.raw, {"Content-Type": "application/json"})
        reason = failure.body_reason or _REASONS.get(code, "Unknown")
        details: dict[str, Any] = {}
        headers: dict[str, str] = {}
        verb = self._verb(rec, route)
        plural = route.plural if route and route.plural else None
        group = route.group if route else ""
        qualified = rt.qualified if rt else (f"{plural}.{group}" if plural and group else plural)
        if plural:
            details = {"group": group, "kind": plural}
            if route and route.name:
                details["name"] = route.name
        if code == 401:
            message = "Unauthorized"
            details = {}
        elif code == 403:
            if plural and route is not None:
                res = f"{plural}/{route.subresource}" if route.subresource else plural
                scope = f'in the namespace "{route.namespace}"' if route.namespace else "at the cluster scope"
                subject = f'{qualified} "{route.name}"' if route.name else qualified
                message = (f'{subject} is forbidden: User "{self.user}" cannot {verb} resource "{res}" '
                           f'in API group "{group}" {scope}')
            else:
                message = f'forbidden: User "{self.user}" cannot {verb} path "{rec.path}"'
        elif code == 404:
            if plural and route and route.name:
                message = f'{qualified} "{route.name}" not found'
            else:
                message, details = "the server could not find the requested resource", {}
        elif code == 409:
            message = f'Operation cannot be fulfilled on {qualified} "{route.name if route else ""}": ' \
                      "the object has been modified; please apply your changes to the latest version and try again"
        elif code == 410:
            message = "too old resource version: 1 (1000)"
        elif code == 429:
            message = "Too many requests, please try again later."
        elif code == 500:
            message = "Internal error occurred: injected failure"
        elif code == 503:
            message = "the server is currently unable to handle the request"
        elif code == 504:
            message = "the server was unable to return a response in the time allotted, but may still be processing"
        else:
            message = f"injected failure {code}"
        if failure.retry_after is not None:
            headers["Retry-After"] = str(int(failure.retry_after) if float(failure.retry_after).is_integer()
                                         else failure.retry_after)
            details["retryAfterSeconds"] = int(failure.retry_after)
        return _error(code, message, reason, details, headers=headers)

    @staticmethod
    def _verb(rec: Recorded, route: Route | None) -> str:
        if rec.method == "GET":
            if route is None or route.plural is None or route.name is not None:
                return "get"
            return "watch" if rec.is_watch else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if route and route.name else "deletecollection"}.get(rec.method, rec.method.lower())

    # ---- HTTP plumbing ---------------------------------------------------------------------

    def _dispatch(self, h: BaseHTTPRequestHandler) -> None:
        split = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        raw = self._read_body(h)
        body: Any = None
        if raw:
            text = raw.decode("utf-8", "replace")
            try:
                body = json.loads(text)
            except ValueError:
                body = text
        rec = Recorded(h.command, split.path, query, Headers(h.headers.items()), body)
        with self._lock:
            self.requests.append(rec)
        try:
            result = self._handle(rec)
        except _Reply as reply:
            result = reply
        except Exception:  # a bug here: answer 500 and keep the traceback for the fixture to report
            import traceback
            tb = traceback.format_exc()
            with self._lock:
                self.errors.append(f"{rec.method} {h.path}\n{tb}")
            result = _error(500, f"fake apiserver bug: {tb.strip().splitlines()[-1]}")
        try:
            if isinstance(result, _Watch):
                self._stream(h, result)
            else:
                self._send(h, result.code, result.body, result.headers)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True

    @staticmethod
    def _read_body(h: BaseHTTPRequestHandler) -> bytes:
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += h.rfile.read(size)
                h.rfile.readline()
        length = int(h.headers.get("Content-Length") or 0)
        return h.rfile.read(length) if length else b""

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, code: int, body: Any, headers: dict[str, str]) -> None:
        if isinstance(body, (bytes, str)):
            data = body.encode() if isinstance(body, str) else body
            content_type = headers.pop("Content-Type", "text/plain; charset=utf-8")
        else:
            data = json.dumps(body).encode()
            content_type = "application/json"
        h.send_response(code)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Cache-Control", "no-cache, private")
        for name, value in headers.items():
            h.send_header(name, value)
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _stream(self, h: BaseHTTPRequestHandler, watch: _Watch) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def chunk(data: bytes) -> None:
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()

        for event in watch.events:
            chunk(json.dumps(event).encode() + b"\n")
        for event in watch.follow():
            if event is _DROP:  # half an event, then the connection goes
                h.wfile.write(b"40\r\n{\"type\":\"MODIFIED\",\"obj")
                h.wfile.flush()
                h.close_connection = True
                h.connection.shutdown(socket.SHUT_RDWR)
                return
            chunk(json.dumps(event).encode() + b"\n")
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()

    # ---- routing ---------------------------------------------------------------------------

    def _handle(self, rec: Recorded) -> _Reply | _Watch:
        route = parse_path(rec.path)
        rt = self._types.get((route.group, route.plural)) if route and route.plural else None
        if self.token is not None and rec.headers.get("Authorization") != f"Bearer {self.token}":
            raise _error(401, "Unauthorized")
        injected = self._injected(rec, route, rt)
        if injected is not None:
            raise injected

        path = rec.path.rstrip("/") or "/"
        if rec.method == "GET":
            if path == "/api":
                return _Reply(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": self.url.removeprefix("http://")}]})
            if path == "/apis":
                return _Reply(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                    "groups": [self._group_doc(g) for g in self._groups()]})
            if path == "/version":
                return _Reply(200, self.server_version)
            if path in ("/healthz", "/livez", "/readyz"):
                return _Reply(200, "ok")
        if route is None:
            raise _not_found_route()
        if route.version is None:  # /apis/{group}
            if rec.method != "GET" or route.group not in self._groups():
                raise _not_found_route()
            return _Reply(200, {"kind": "APIGroup", "apiVersion": "v1", **self._group_doc(route.group)})
        if route.plural is None:  # /api/v1, /apis/{group}/{version}
            resources = self._resources_in(route.group, route.version)
            if rec.method != "GET" or not resources:
                raise _not_found_route()
            return _Reply(200, self._resource_list_doc(route.group, route.version, resources))

        if rt is None or rt not in self._resources_in(route.group, route.version):
            raise _not_found_route()
        if route.namespace is not None and not rt.namespaced:
            raise _not_found_route()
        if route.subresource is not None and (route.subresource != "status" or not rt.status):
            raise _not_found_route()
        if rt.namespaced and route.name is not None and route.namespace is None:
            raise _not_found_route()

        if route.name is None:
            if rec.method == "GET":
                if rec.is_watch:
                    return self._watch(rt, route, rec.query)
                return self._list(rt, route, rec.query)
            if rec.method == "POST":
                if rt.namespaced and route.namespace is None:
                    raise _error(405, "the server does not allow this method on the requested resource")
                return self._create(rt, route, rec)
            raise _error(405, "the server does not allow this method on the requested resource")
        if rec.method == "GET":
            return _Reply(200, self._present(self._existing(rt, route), rt, route.version))
        if rec.method == "PUT":
            return self._replace(rt, route, rec)
        if rec.method == "PATCH":
            return self._patch(rt, route, rec)
        if rec.method == "DELETE":
            return self._delete(rt, route, rec)
        raise _error(405, "the server does not allow this method on the requested resource")

    def _group_doc(self, group: str) -> dict:
        versions = self.served_versions(group)
        return {"name": group,
                "versions": [{"groupVersion": _gv(group, v), "version": v} for v in versions],
                "preferredVersion": {"groupVersion": _gv(group, versions[0]), "version": versions[0]}}

    @staticmethod
    def _resource_list_doc(group: str, version: str, resources: list[ResourceType]) -> dict:
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        entries = []
        for rt in sorted(resources, key=lambda r: r.plural):
            entry = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                     "kind": rt.kind, "verbs": verbs}
            if rt.short_names:
                entry["shortNames"] = list(rt.short_names)
            entries.append(entry)
            if rt.status:
                entries.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                                "kind": rt.kind, "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": _gv(group, version),
                "resources": entries}

    # ---- reads -----------------------------------------------------------------------------

    @staticmethod
    def _present(obj: dict, rt: ResourceType, version: str | None) -> dict:
        out = _copy(obj)
        out["apiVersion"] = _gv(rt.group, version or "v1")
        out["kind"] = rt.kind
        return out

    def _existing(self, rt: ResourceType, route: Route) -> dict:
        with self._lock:
            obj = self._store.get((rt.group, rt.plural), {}).get(self._key(rt, route.namespace, route.name or ""))
            if obj is None:
                raise self._not_found(rt, route.name or "")
            return _copy(obj)

    @staticmethod
    def _key(rt: ResourceType, namespace: str | None, name: str) -> _Key:
        return ((namespace or "") if rt.namespaced else "", name)

    @staticmethod
    def _not_found(rt: ResourceType, name: str) -> _Reply:
        return _error(404, f'{rt.qualified} "{name}" not found', "NotFound",
                      {"name": name, "group": rt.group, "kind": rt.plural})

    def _matcher(self, rt: ResourceType, route: Route, query: dict[str, str]) -> Callable[[dict], bool]:
        labels = parse_label_selector(query.get("labelSelector", ""))
        minor = re.match(r"v1\.(\d+)", str(self.server_version.get("gitVersion", "")))
        fields = parse_field_selector(query.get("fieldSelector", ""), rt, int(minor.group(1)) if minor else 37)
        namespace = route.namespace

        def match(obj: dict) -> bool:
            meta = obj.get("metadata") or {}
            if namespace is not None and meta.get("namespace") != namespace:
                return False
            return labels(meta.get("labels") or {}) and fields(obj)
        return match

    def _list(self, rt: ResourceType, route: Route, query: dict[str, str]) -> _Reply:
        match = self._matcher(rt, route, query)
        token = query.get("continue") or None
        with self._lock:
            store = self._store.get((rt.group, rt.plural), {})
            ordered = self._sorted_keys(rt, store)
            rv = self._rv
            if token and self._expire_continue > 0:
                self._expire_continue -= 1
                start = self._decode_token(token, rt)
                fresh = self._encode_token(rt, start, rv)
                raise _error(410, "The provided continue parameter is too old to display a consistent list "
                                  "result. You can start a new list without the continue parameter, or use the "
                                  "continue token in this response to retrieve the remainder of the results. "
                                  "Continuing with the provided token results in an inconsistent list - objects "
                                  "that were created, modified, or deleted between the time the first chunk was "
                                  "returned and now may show up in the list.",
                             "Expired", metadata={"continue": fresh})
            first = bisect.bisect_right(ordered, self._decode_token(token, rt)) if token else 0
            try:
                limit = int(query.get("limit") or 0)
            except ValueError:
                raise _error(400, f"invalid limit: {query.get('limit')!r}") from None
            if limit > 0 and self.page_size_cap:
                limit = min(limit, self.page_size_cap)
            meta: dict[str, Any] = {"resourceVersion": str(rv)}
            keys: list = []
            position = first
            while position < len(ordered) and (limit <= 0 or len(keys) <= limit):
                key = ordered[position]
                if match(store[key]):
                    keys.append(key)
                position += 1
            if limit > 0 and len(keys) > limit:
                keys = keys[:limit]
                meta["continue"] = self._encode_token(rt, keys[-1], rv)
                if not query.get("labelSelector") and not query.get("fieldSelector"):
                    meta["remainingItemCount"] = len(ordered) - bisect.bisect_right(ordered, keys[-1])
            items = [self._present(store[k], rt, route.version) for k in keys]
        return _Reply(200, {"kind": f"{rt.kind}List", "apiVersion": _gv(rt.group, route.version or "v1"),
                            "metadata": meta, "items": items})

    def _sorted_keys(self, rt: ResourceType, store: dict) -> list:
        """The store's keys in order, cached until the next write (pages bisect into it)."""
        cached = self._key_cache.get((rt.group, rt.plural))
        if cached is None or cached[0] != self._rv or cached[1] != len(store):
            cached = (self._rv, len(store), sorted(store))
            self._key_cache[(rt.group, rt.plural)] = cached
        return cached[2]

    @staticmethod
    def _encode_token(rt: ResourceType, key: _Key, rv: int) -> str:
        doc = {"v": "meta.k8s.io/v1", "rv": rv, "r": rt.qualified, "start": list(key)}
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    @staticmethod
    def _decode_token(token: str, rt: ResourceType) -> _Key:
        try:
            doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            if doc.get("r") != rt.qualified:
                raise ValueError("continue token for another resource")
            ns, name = doc["start"]
            return (str(ns), str(name))
        except (ValueError, KeyError, TypeError) as exc:
            raise _error(400, f"continue key is not valid: {exc}") from None

    def _watch(self, rt: ResourceType, route: Route, query: dict[str, str]) -> _Watch:
        match = self._matcher(rt, route, query)
        try:
            timeout = float(query.get("timeoutSeconds") or self.watch_timeout)
        except ValueError:
            timeout = self.watch_timeout
        timeout = min(timeout, self.watch_timeout)
        since = query.get("resourceVersion") or ""
        with self._lock:
            store = self._store.get((rt.group, rt.plural), {})
            if since in ("", "0"):
                initial = [{"type": "ADDED", "object": self._present(store[k], rt, route.version)}
                           for k in sorted(store) if match(store[k])]
                cursor = len(self._events)
            else:
                try:
                    since_rv = int(since)
                except ValueError:
                    raise _error(400, f"invalid resource version: {since!r}") from None
                initial = []
                cursor = next((i for i, e in enumerate(self._events) if e[0] > since_rv), len(self._events))
                if since_rv < self._compacted:
                    gone = status_doc(410, "Expired", f"too old resource version: {since_rv} ({self._compacted})")
                    return _Watch([{"type": "ERROR", "object": gone}], lambda: iter(()))
            drops = self._drops
        deadline = time.monotonic() + timeout
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("1", "true")

        def follow() -> Iterator[dict]:
            nonlocal cursor
            while True:
                with self._cond:
                    while cursor >= len(self._events) and not self._stopping and self._drops == drops:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return
                        self._cond.wait(left)
                    if self._stopping:
                        return
                    if self._drops != drops:
                        yield _DROP
                        return
                    pending, cursor = self._events[cursor:], len(self._events)
                for rv, key, kind, obj in pending:
                    if kind == "BOOKMARK":
                        if bookmarks:
                            yield {"type": "BOOKMARK", "object": {
                                "kind": rt.kind, "apiVersion": _gv(rt.group, route.version or "v1"),
                                "metadata": {"resourceVersion": str(rv)}}}
                    elif key == (rt.group, rt.plural) and match(obj):
                        yield {"type": kind, "object": self._present(obj, rt, route.version)}

        return _Watch(initial, follow)

    # ---- writes ----------------------------------------------------------------------------

    def _body_object(self, rec: Recorded, rt: ResourceType) -> dict:
        if not isinstance(rec.body, dict):
            raise _error(400, "the body of the request was in an unknown format - accepted media types "
                              "include: application/json, application/yaml")
        if rec.body.get("kind") not in (None, "", rt.kind):
            raise _error(400, f"the kind in the data ({rec.body.get('kind')}) does not match the expected kind "
                              f"({rt.kind})")
        return _copy(rec.body)

    def _create(self, rt: ResourceType, route: Route, rec: Recorded) -> _Reply:
        obj = self._body_object(rec, rt)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
        if not meta.get("name"):
            raise _error(422, f'{rt.kind} "" is invalid: metadata.name: Required value: name or generateName '
                              "is required", "Invalid", {"kind": rt.kind, "group": rt.group})
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != route.namespace:
                raise _error(400, "the namespace of the provided object does not match the namespace sent "
                                  "on the request")
            meta["namespace"] = route.namespace
        else:
            meta.pop("namespace", None)
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        obj["apiVersion"], obj["kind"] = _gv(rt.group, route.version or "v1"), rt.kind
        with self._lock:
            store = self._store.setdefault((rt.group, rt.plural), {})
            key = self._key(rt, route.namespace, meta["name"])
            if key in store:
                raise _error(409, f'{rt.qualified} "{meta["name"]}" already exists', "AlreadyExists",
                             {"name": meta["name"], "group": rt.group, "kind": rt.plural})
            meta.pop("uid", None)
            meta.pop("creationTimestamp", None)
            if "spec" in obj:
                meta.setdefault("generation", 1)
            self._stamp(obj, None)
            if not rec.query.get("dryRun"):
                store[key] = obj
                self._event("ADDED", rt, obj)
            return _Reply(201, self._present(obj, rt, route.version))

    def _check_precondition(self, rt: ResourceType, route: Route, new: dict, old: dict) -> None:
        want = (new.get("metadata") or {}).get("resourceVersion")
        if want and want != old["metadata"].get("resourceVersion"):
            raise _error(409, f'Operation cannot be fulfilled on {rt.qualified} "{route.name}": the object has '
                              "been modified; please apply your changes to the latest version and try again",
                         "Conflict", {"name": route.name, "group": rt.group, "kind": rt.plural})

    def _commit(self, rt: ResourceType, route: Route, rec: Recorded, old: dict, new: dict) -> _Reply:
        """Store ``new`` in place of ``old`` with server-owned fields kept; caller holds the lock."""
        if route.subresource == "status":
            merged = _copy(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        elif rt.status:
            new.pop("status", None)
            if "status" in old:
                new["status"] = old["status"]
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        for field in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if "generation" in old_meta:
            meta["generation"] = old_meta["generation"] + (1 if new.get("spec") != old.get("spec") else 0)
        new["apiVersion"], new["kind"] = old.get("apiVersion"), rt.kind
        key = self._key(rt, route.namespace, route.name or "")
        if new == old:  # a no-op write keeps the resourceVersion, as a real server does
            return _Reply(200, self._present(old, rt, route.version))
        meta["resourceVersion"] = old_meta.get("resourceVersion")
        if rec.query.get("dryRun"):
            return _Reply(200, self._present(new, rt, route.version))
        self._stamp(new, old)
        store = self._store[(rt.group, rt.plural)]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del store[key]
            self._event("DELETED", rt, new)
        else:
            store[key] = new
            self._event("MODIFIED", rt, new)
        return _Reply(200, self._present(new, rt, route.version))

    def _replace(self, rt: ResourceType, route: Route, rec: Recorded) -> _Reply:
        new = self._body_object(rec, rt)
        body_name = (new.get("metadata") or {}).get("name")
        if body_name and body_name != route.name:
            raise _error(400, f"the name of the object ({body_name}) does not match the name on the URL "
                              f"({route.name})")
        with self._lock:
            old = self._existing(rt, route)
            self._check_precondition(rt, route, new, old)
            return self._commit(rt, route, rec, old, new)

    def _patch(self, rt: ResourceType, route: Route, rec: Recorded) -> _Reply:
        content_type = rec.headers.get("Content-Type") or ""
        content_type = content_type.split(";")[0].strip().lower()
        with self._lock:
            if content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                if not isinstance(rec.body, dict):
                    raise _error(400, "the body of a merge patch must be a JSON object")
                old = self._existing(rt, route)
                new = merge_patch(old, rec.body)
            elif content_type == "application/json-patch+json":
                if not isinstance(rec.body, list):
                    raise _error(400, "the body of a JSON patch must be a list of operations")
                old = self._existing(rt, route)
                new = json_patch(old, rec.body)
            elif content_type == "application/apply-patch+yaml":
                if not rec.query.get("fieldManager"):
                    raise _error(422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                      "is required for apply patch", "Invalid")
                patch = rec.body
                if isinstance(patch, str):
                    import yaml
                    patch = yaml.safe_load(patch)
                if not isinstance(patch, dict):
                    raise _error(400, "the body of an apply patch must be an object")
                store = self._store.setdefault((rt.group, rt.plural), {})
                if self._key(rt, route.namespace, route.name or "") not in store:
                    create = Recorded("POST", rec.path, rec.query, rec.headers, patch)
                    return self._create(rt, route, create)
                old = self._existing(rt, route)
                new = merge_patch(old, patch)  # an approximation: no field ownership
            else:
                raise _error(415, f"the body of the request was in an unknown format - accepted media types "
                                  f"include: application/json-patch+json, application/merge-patch+json, "
                                  f"application/apply-patch+yaml, application/strategic-merge-patch+json "
                                  f"(got {content_type!r})")
            if not isinstance(new, dict):
                raise _error(422, "the patch did not produce an object", "Invalid")
            self._check_precondition(rt, route, new if isinstance(rec.body, dict) else {}, old)
            return self._commit(rt, route, rec, old, new)

    def _delete(self, rt: ResourceType, route: Route, rec: Recorded) -> _Reply:
        with self._lock:
            old = self._existing(rt, route)
            key = self._key(rt, route.namespace, route.name or "")
            store = self._store[(rt.group, rt.plural)]
            if rec.query.get("dryRun"):
                return _Reply(200, self._present(old, rt, route.version))
            if old["metadata"].get("finalizers"):
                if not old["metadata"].get("deletionTimestamp"):
                    old["metadata"]["deletionTimestamp"] = _now()
                    old["metadata"]["resourceVersion"] = self._next_rv()
                    store[key] = old
                    self._event("MODIFIED", rt, old)
                return _Reply(202, self._present(old, rt, route.version))
            del store[key]
            self._next_rv()
            self._event("DELETED", rt, old)
            return _Reply(200, self._present(old, rt, route.version))
