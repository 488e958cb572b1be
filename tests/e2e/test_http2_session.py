"""The agent's libcurl session keeps every promise of the official client's session
(kubectl_dra/kube/client.py): 429 and 5xx retried with Retry-After, a refused connection retried,
writes never retried, a 401 naming the credential, an answer's deadline, a watch that a close()
ends at once. Each case runs through both sessions against the same fake server (HTTP/1.1: the
fake server speaks no h2; the real API server's HTTP/2 is tests/cluster/test_agent_connection.py),
so a difference between the two transports fails here."""

from __future__ import annotations

import socket
import threading
import time

import kubernetes
import pytest

from kubectl_dra.errors import ApiError
from kubectl_dra.kube.client import Session
from kubectl_dra.kube.http2 import Http2Session

SESSIONS = {"urllib3": Session, "libcurl": Http2Session}


def open_session(kind: str, url: str, **kwargs):
    configuration = kubernetes.client.Configuration(host=url)
    configuration.api_key["BearerToken"] = "Bearer t0ken"
    return SESSIONS[kind](configuration, sleep=lambda s: None, **kwargs)


@pytest.fixture(params=sorted(SESSIONS))
def kind(request):
    return request.param


def test_throttled_and_failing_gets_are_retried_after_what_the_server_asks(kind, apiserver):
    apiserver.fail(429, resource="namespaces", times=2, retry_after=1)
    apiserver.fail(503, resource="namespaces", times=1)
    session = open_session(kind, apiserver.url)
    try:
        assert session.get("/api/v1/namespaces")["kind"] == "NamespaceList"
        assert sum(1 for r in apiserver.requests if r.path.startswith("/api/v1/namespaces")) == 4
        assert all(r.headers.get("Authorization") == "Bearer t0ken" for r in apiserver.requests)
    finally:
        session.close()


def test_a_write_is_never_retried_and_keeps_the_servers_message(kind, apiserver):
    apiserver.fail(503, resource="namespaces", method="POST", times=1, body_reason="busy")
    session = open_session(kind, apiserver.url)
    try:
        with pytest.raises(ApiError) as caught:
            session.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "x"}})
        assert caught.value.status == 503
        assert sum(1 for r in apiserver.requests if r.method == "POST") == 1
        created = session.request("POST", "/api/v1/namespaces",
                                  body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
        assert created["metadata"]["name"] == "x"  # the body arrives as JSON
    finally:
        session.close()


def test_a_refused_token_names_the_credential(kind, make_apiserver):
    server = make_apiserver(token="right")
    session = open_session(kind, server.url, credential='user "u" (bearer token)')
    try:
        with pytest.raises(ApiError) as caught:
            session.get("/api/v1/namespaces")
        assert caught.value.status == 401 and 'refused user "u" (bearer token)' in str(caught.value)
    finally:
        session.close()


def test_a_refused_connection_is_tried_three_times_then_named(kind):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    waits = []
    configuration = kubernetes.client.Configuration(host=f"http://127.0.0.1:{port}")
    session = SESSIONS[kind](configuration, sleep=waits.append)
    try:
        with pytest.raises(ApiError) as caught:
            session.get("/api/v1/namespaces")
        assert "connection refused" in str(caught.value)
        assert waits == [0.25, 0.5]  # two retries, with the backoff
    finally:
        session.close()


def test_an_answer_that_drips_is_cut_at_the_deadline(kind, dripping_server):
    session = open_session(kind, dripping_server, request_timeout=1.5)
    began = time.monotonic()
    try:
        with pytest.raises(ApiError) as caught:
            session.get("/api/v1/namespaces")
        assert "did not finish its answer" in str(caught.value) and "1.5s" in str(caught.value)
        assert time.monotonic() - began < 5
    finally:
        session.close()


def test_a_closed_watch_ends_at_once(kind, apiserver):
    apiserver.watch_timeout = 60.0
    session = open_session(kind, apiserver.url)
    handles, seen = [], []

    def follow():
        for event in session.watch("/api/v1/namespaces", [("resourceVersion", "0")], timeout=60,
                                   opened=handles.append):
            seen.append(event)

    thread = threading.Thread(target=follow, daemon=True)
    try:
        thread.start()
        deadline = time.monotonic() + 10
        while not handles and time.monotonic() < deadline:
            time.sleep(0.05)
        began = time.monotonic()
        handles[0].shutdown()
        thread.join(5)
        assert not thread.is_alive() and time.monotonic() - began < 3
        assert session.get("/api/v1/namespaces")["kind"] == "NamespaceList"  # the session still works
    finally:
        session.close()


def test_a_closed_session_fails_at_once_rather_than_waiting(apiserver):
    session = open_session("libcurl", apiserver.url)
    assert session.get("/api/v1/namespaces")["kind"] == "NamespaceList"
    session.close()
    began = time.monotonic()
    with pytest.raises(ApiError) as caught:
        session.get("/api/v1/namespaces")
    assert "the session was closed" in str(caught.value) and time.monotonic() - began < 1


def test_the_credential_is_read_afresh_for_each_request_and_watch(kind, apiserver):
    """An in-cluster token is rotated on disk; the client's refresh hook reads it before each
    request (kubernetes.config.incluster_config), and the watch sends the current one too."""
    tokens = iter(["first", "second", "third"])
    configuration = kubernetes.client.Configuration(host=apiserver.url)

    def refresh(c):
        c.api_key["BearerToken"] = f"Bearer {next(tokens)}"

    configuration.api_key["BearerToken"] = "Bearer stale"  # what the loader read at start
    configuration.refresh_api_key_hook = refresh
    session = SESSIONS[kind](configuration, sleep=lambda s: None)
    try:
        session.get("/api/v1/namespaces")
        session.get("/api/v1/namespaces")
        apiserver.watch_timeout = 0.5
        list(session.watch("/api/v1/namespaces", [("resourceVersion", "0")], timeout=5))
        sent = [r.headers.get("Authorization") for r in apiserver.requests if r.path.startswith("/api/v1/namespaces")]
        assert sent == ["Bearer first", "Bearer second", "Bearer third"]
    finally:
        session.close()
