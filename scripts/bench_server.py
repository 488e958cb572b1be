"""A local API server (the tests' fake) holding a synthetic cluster, in its own process, as a real
API server would be: ``python scripts/bench_server.py CLAIMS`` prints its URL once it serves
CLAIMS claims, 2 x CLAIMS pods and the slices, then serves until stdin closes;
``python scripts/bench_server.py pending NODES PODS`` serves bench.pending_cluster;
``python scripts/bench_server.py devices NODES DEVICES`` serves bench.devices_cluster (and answers
kubectl get's list requests with server-side Tables, as kube-apiserver does)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "scripts")]

from apiserver import FakeAPIServer, _Reply, parse_path  # noqa: E402
from bench import build_cluster, devices_cluster, pending_cluster  # noqa: E402


class _Encoded(bytes):
    """A JSON body already encoded."""


def _age(stamp: str) -> str:
    """kubectl's short age of a creationTimestamp (as the server prints it in a Table)."""
    seconds = int((datetime.now(timezone.utc) - datetime.fromisoformat(stamp.replace("Z", "+00:00"))).total_seconds())
    if seconds < 0:
        return "<invalid>"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _claim_state(obj: dict) -> str:
    status = obj.get("status") or {}
    states = [s for s, on in (("allocated", "allocation" in status), ("reserved", bool(status.get("reservedFor"))),
                              ("deleted", "deletionTimestamp" in obj["metadata"])) if on]
    return ",".join(states) or "pending"


# kube-apiserver's printers (pkg/printers/internalversion) for the kinds kubectl get reads in a bench
TABLE_COLUMNS = {
    "resourceclaims": (["Name", "State", "Age"],
                       lambda o: [o["metadata"]["name"], _claim_state(o), _age(o["metadata"]["creationTimestamp"])]),
    "resourceslices": (["Name", "Node", "Driver", "Pool", "Age"],
                       lambda o: [o["metadata"]["name"], o["spec"].get("nodeName", ""), o["spec"]["driver"],
                                  o["spec"]["pool"]["name"], _age(o["metadata"]["creationTimestamp"])]),
}


class ReadOnlyServer(FakeAPIServer):
    """Nothing is written during a bench: objects are served as stored, not copied per request,
    and each list page is encoded once and then served as bytes, as kube-apiserver serves a list
    from its watch cache (otherwise this Python fake, not the command, is what 100,000 pods time)."""

    tables = False  # answer ``Accept: ...;as=Table`` lists of TABLE_COLUMNS' kinds with a Table

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pages: dict = {}

    def _handle(self, rec):
        """With ``tables``, a list that asks for a Table (kubectl get's human-readable output) gets one:
        the page's rows (the printer's cells and each object's metadata, includeObject=Metadata, the
        default), as kube-apiserver answers it, so kubectl holds and prints what it would from a real
        server rather than decoding whole objects. Encoded once per page, as the lists are."""
        reply = super()._handle(rec)
        route = parse_path(rec.path) if self.tables else None
        if (route is None or route.plural not in TABLE_COLUMNS or route.name is not None
                or "as=Table" not in (rec.headers.get("Accept") or "")
                or not isinstance(getattr(reply, "body", None), _Encoded)):
            return reply
        key = ("Table", route.plural, route.namespace, tuple(sorted(rec.query.items())))
        table = self._pages.get(key)
        if table is None:
            page = json.loads(reply.body)
            columns, cells = TABLE_COLUMNS[route.plural]
            table = _Reply(200, _Encoded(json.dumps({
                "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": page["metadata"],
                "columnDefinitions": [{"name": c, "type": "string", "format": "name" if c == "Name" else "",
                                       "description": c, "priority": 0} for c in columns],
                "rows": [{"cells": cells(o), "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                                         "metadata": o["metadata"]}} for o in page["items"]],
            }).encode()), dict(reply.headers))
            self._pages[key] = table
        return table

    @staticmethod
    def _present(obj: dict, rt, version) -> dict:
        return obj

    def _list(self, rt, route, query):
        key = (rt.group, rt.plural, route.namespace, route.version, tuple(sorted(query.items())))
        reply = self._pages.get(key)
        if reply is None:
            reply = super()._list(rt, route, query)
            reply.body = _Encoded(json.dumps(reply.body).encode())
            self._pages[key] = reply
        return reply

    @staticmethod
    def _send(h, code, body, headers):
        if not isinstance(body, _Encoded):
            return FakeAPIServer._send(h, code, body, headers)
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(body)


def main() -> None:
    if sys.argv[1] in ("pending", "devices"):
        build = pending_cluster if sys.argv[1] == "pending" else devices_cluster
        objects = build(int(sys.argv[2]), int(sys.argv[3]))
        server = ReadOnlyServer(objects)
        if sys.argv[1] == "devices":  # a 1.37 API server serves DeviceTaintRules (resource.k8s.io/v1): none here
            server.register("resource.k8s.io", "v1", "DeviceTaintRule", "devicetaintrules", False, status=True)
            server.tables = True
        server.start()
        del objects
        print(server.url, flush=True)
        sys.stdin.read()
        server.stop()
        return
    else:
        claims = int(sys.argv[1])
        objects = build_cluster(claims, 2 * claims)
    server = FakeAPIServer(objects).start()
    del objects
    print(server.url, flush=True)
    sys.stdin.read()  # until the bench closes our stdin
    server.stop()


if __name__ == "__main__":
    main()
