"""The agent's HTTP endpoints: /metrics (Prometheus), /healthz, /readyz, /report (JSON)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def serve(listen: str, registry, healthy: Callable[[], bool], ready: Callable[[], bool],
          report: Callable[[], dict | None]) -> ThreadingHTTPServer:
    """Start serving in a daemon thread; returns the server (``server_address`` has the real port)."""
    host, _, port = listen.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # no access log on stderr
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path = self.path.split("?")[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok = healthy()
                self._send(200 if ok else 503, b"ok\n" if ok else b"scan loop stalled\n", "text/plain")
            elif path == "/readyz":
                ok = ready()
                self._send(200 if ok else 503, b"ok\n" if ok else b"no scan yet\n", "text/plain")
            elif path == "/report":
                doc = report()
                if doc is None:
                    self._send(503, b'{"error": "no scan yet"}\n', "application/json")
                else:
                    self._send(200, json.dumps(doc, indent=2).encode() + b"\n", "application/json")
            else:
                self._send(404, b"not found\n", "text/plain")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server_class = _Server6 if ":" in host else ThreadingHTTPServer
    server = server_class((host or "0.0.0.0", int(port)), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server
