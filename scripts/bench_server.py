"""A local API server (the tests' fake) holding a synthetic cluster, in its own process, as a real
API server would be: ``python scripts/bench_server.py CLAIMS`` prints its URL once it serves
CLAIMS claims, 2 x CLAIMS pods and the slices, then serves until stdin closes;
``python scripts/bench_server.py pending NODES PODS`` serves bench.pending_cluster;
``python scripts/bench_server.py devices NODES DEVICES`` serves bench.devices_cluster."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "scripts")]

from apiserver import FakeAPIServer  # noqa: E402
from bench import build_cluster, devices_cluster, pending_cluster  # noqa: E402


class _Encoded(bytes):
    """A JSON body already encoded."""


class ReadOnlyServer(FakeAPIServer):
    """Nothing is written during a bench: objects are served as stored, not copied per request,
    and each list page is encoded once and then served as bytes, as kube-apiserver serves a list
    from its watch cache (otherwise this Python fake, not the command, is what 100,000 pods time)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pages: dict = {}

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
