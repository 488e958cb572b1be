"""Shared fixtures: a local fake Kubernetes API server and kubeconfigs pointing at it."""

from __future__ import annotations

import itertools
import pathlib
import socket
import sys
import threading
from typing import Callable, Iterable, Iterator

import pytest
import yaml

_TESTS_DIR = str(pathlib.Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:  # `from apiserver import FakeAPIServer` in any test module
    sys.path.insert(0, _TESTS_DIR)

from apiserver import FakeAPIServer  # noqa: E402


def _stop_and_check(server: FakeAPIServer) -> None:
    server.stop()
    if server.errors:
        pytest.fail("the fake API server hit internal errors:\n" + "\n".join(server.errors), pytrace=False)


@pytest.fixture
def apiserver() -> Iterator[FakeAPIServer]:
    """A started, empty :class:`FakeAPIServer` (add objects with ``apiserver.add``); stopped afterwards."""
    server = FakeAPIServer().start()
    try:
        yield server
    finally:
        _stop_and_check(server)


@pytest.fixture
def make_apiserver() -> Iterator[Callable[..., FakeAPIServer]]:
    """``make_apiserver(objects=(), served=None, **kw)`` -> a started server, stopped afterwards."""
    servers: list[FakeAPIServer] = []

    def make(objects: Iterable[dict] = (), served: dict | None = None, **kwargs) -> FakeAPIServer:
        server = FakeAPIServer(objects, served, **kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        _stop_and_check(server)


@pytest.fixture
def kubeconfig_for(tmp_path: pathlib.Path) -> Callable[..., pathlib.Path]:
    """``kubeconfig_for(server, namespace="default", context="test")`` -> path of a kubeconfig file.

    The cluster's server is ``server.url``; the user authenticates with a bearer token
    (``server.token`` when the server enforces one, else ``"test-token"``).
    """
    counter = itertools.count()

    def write(server: FakeAPIServer, namespace: str = "default", context: str = "test", *,
              token: str | None = None) -> pathlib.Path:
        user = f"{context}-user"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": server.url}}],
            "users": [{"name": user, "user": {"token": token or server.token or "test-token"}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": user, "namespace": namespace}}],
            "current-context": context,
            "preferences": {},
        }
        n = next(counter)
        path = tmp_path / ("kubeconfig" if n == 0 else f"kubeconfig-{n}")
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    return write


# --------------------------------------------------------------------------- the CLI

class CliResult:
    def __init__(self, exit_code: int, stdout: str, stderr: str):
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr

    def json(self):
        import json

        return json.loads(self.stdout)

    def __repr__(self) -> str:
        return f"CliResult(exit={self.exit_code}, stdout={self.stdout[:300]!r}, stderr={self.stderr[:300]!r})"


def _dra() -> Callable[..., CliResult]:
    """``dra("claims", "-A", ...)`` runs ``kubectl dra`` through click's runner.

    The clock is fixed at 2026-11-22T12:00:00Z so AGE columns are stable; colour is off.
    """
    from datetime import datetime, timezone

    from click.testing import CliRunner

    from kubectl_dra.cli import cli
    from kubectl_dra.env import Environment

    def run(*args: str, env: dict | None = None) -> CliResult:
        environment = Environment(stdout_isatty=False, environ=dict(env or {}),
                                  now=lambda: datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc))
        runner = CliRunner()
        result = runner.invoke(cli, list(args), obj=environment, env=env, catch_exceptions=False,
                               prog_name="kubectl dra")
        return CliResult(result.exit_code, result.stdout, result.stderr)

    return run


@pytest.fixture
def dra() -> Callable[..., CliResult]:
    """``dra("claims", "-A", ...)``: kubectl dra through click's runner (see :func:`_dra`)."""
    return _dra()


@pytest.fixture(scope="module")
def dra_module() -> Callable[..., CliResult]:
    """The same, for a module's fixture that runs the commands once for all its tests."""
    return _dra()


@pytest.fixture
def dripping_server():
    """Answers every request with its headers, then one byte of a 1,000-byte body every 0.5 s."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
            for _ in range(1000):
                if stop.wait(0.5):
                    return
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()
