"""What a real API server will not do on demand, through the real client against the fake one in
tests/apiserver.py: a continue token that expires mid-list (410), 5xx that must be retried, a
server that serves no DRA API or only the 1.36 versions, no server at all. Everything a real
server does is tested against one in tests/cluster/."""

from __future__ import annotations

import socket

import pytest
from builders import claim, pod, small_cluster

GPU = "gpu.example.com"


@pytest.fixture
def cluster(make_apiserver, kubeconfig_for):
    server = make_apiserver(small_cluster())
    return server, str(kubeconfig_for(server, namespace="ml"))


def test_pagination_follows_continue_and_restarts_after_410(make_apiserver, kubeconfig_for, dra):
    objects = [claim(f"c-{i:04d}", devices=()) for i in range(1203)]
    server = make_apiserver(objects)
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    server.expire_continue_tokens(times=1)
    result = dra("claims", "--kubeconfig", kubeconfig, "-o", "name")
    assert result.exit_code == 0, result
    assert len(result.stdout.splitlines()) == 1203
    pages = server.list_requests("resourceclaims")
    # first attempt: page 1 ok, page 2 gets 410 -> restart: 3 pages
    assert [("continue" in r.query) for r in pages] == [False, True, False, True, True]


def test_server_errors_are_retried(cluster, dra):
    server, kubeconfig = cluster
    server.fail(500, resource="resourceclaims", times=2)
    result = dra("claims", "--kubeconfig", kubeconfig, "-A", "-o", "name")
    assert result.exit_code == 0, result
    assert len(result.stdout.splitlines()) == 3
    assert len(server.list_requests("resourceclaims")) == 3


def test_unreachable_server(tmp_path, dra):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = dra("claims", "--server", f"http://127.0.0.1:{port}", "--request-timeout", "2s")
    assert result.exit_code == 3
    assert result.stderr.strip() == f"error: cannot reach the API server at http://127.0.0.1:{port}: connection refused"


def test_missing_kubeconfig_file(tmp_path, dra):
    result = dra("claims", "--kubeconfig", str(tmp_path / "nope"))
    assert result.exit_code == 3
    assert "nope" in result.stderr and "Traceback" not in result.stderr


def test_dra_api_not_served(make_apiserver, kubeconfig_for, dra):
    server = make_apiserver([pod("p")], served={"resource.k8s.io": []})
    result = dra("claims", "--kubeconfig", str(kubeconfig_for(server)), "-A")
    assert result.exit_code == 3, "no claims could be read: nothing to show, not an empty list"
    assert result.stdout == ""
    assert "resource.k8s.io is not served" in result.stderr
    assert result.stderr.splitlines()[-1] == "error: nothing to show: ResourceClaim objects could not be read (see above)"


def test_older_api_generation_is_discovered(make_apiserver, kubeconfig_for, dra):
    old = claim("old", devices=[(GPU, "worker-1", "gpu-0")])
    old["apiVersion"] = "resource.k8s.io/v1beta1"
    old["spec"] = {"devices": {"requests": [{"name": "req", "deviceClassName": GPU, "count": 1}]}}
    server = make_apiserver([old], served={"resource.k8s.io": ["v1beta1"]})
    result = dra("claims", "--kubeconfig", str(kubeconfig_for(server, namespace="ml")), "-o", "json")
    assert result.exit_code == 0, result
    assert result.json()["items"][0]["devices"] == [f"{GPU}/worker-1/gpu-0"]
    assert server.list_requests("resourceclaims")[0].path == "/apis/resource.k8s.io/v1beta1/namespaces/ml/resourceclaims"


def test_retry_after_past_the_request_timeout_is_not_waited_for(cluster, dra):
    """A server asking for 25 s must not hold a command given --request-timeout 2s."""
    import time

    server, kubeconfig = cluster
    server.fail(429, resource="resourceclaims", retry_after=25)
    started = time.monotonic()
    result = dra("claims", "--kubeconfig", kubeconfig, "-A", "--request-timeout", "2s")
    elapsed = time.monotonic() - started
    assert elapsed < 2.5, f"took {elapsed:.1f}s"
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.strip().endswith(
        "(HTTP 429); the API server asked to retry after 25s, past --request-timeout")
    assert len(server.list_requests("resourceclaims")) == 1


def test_retry_after_within_the_request_timeout_is_honoured(cluster, dra):
    import time

    server, kubeconfig = cluster
    server.fail(429, resource="resourceclaims", retry_after=1, times=1)
    started = time.monotonic()
    result = dra("claims", "--kubeconfig", kubeconfig, "-A", "-o", "name", "--request-timeout", "5s")
    assert result.exit_code == 0, result
    assert 1.0 <= time.monotonic() - started < 4.0
    assert len(server.list_requests("resourceclaims")) == 2


def test_retries_stop_at_the_request_timeout(make_apiserver, kubeconfig_for, dra):
    """Backoff retries of a failing server are bounded by the timeout too, not only by their count."""
    import time

    server = make_apiserver(small_cluster())
    server.fail(503, resource="resourceclaims")
    started = time.monotonic()
    result = dra("claims", "--kubeconfig", str(kubeconfig_for(server)), "-A", "--request-timeout", "1s")
    assert time.monotonic() - started < 1.5
    assert result.exit_code == 3 and result.stderr.startswith(  # the server's words, its status and the request
        "error: the server is currently unable to handle the request (HTTP 503 Service Unavailable from GET "
        f"{server.url}/apis/resource.k8s.io/v1/resourceclaims?limit=500, after ")
    assert 2 <= len(server.list_requests("resourceclaims")) <= 4  # 0.25 s, 0.5 s backoff fit; 1 s does not


def test_unauthorized_names_the_credential(make_apiserver, kubeconfig_for, dra):
    server = make_apiserver(small_cluster(), token="right-token")
    kubeconfig = kubeconfig_for(server, context="prod", token="wrong-token")
    result = dra("claims", "--kubeconfig", str(kubeconfig), "-A")
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == (f'error: the API server at {server.url} refused user "prod-user" of context "prod" '
                             "(bearer token): Unauthorized (HTTP 401)\n")
    assert len(server.requests) == 1, "a 401 is not retried"
    flag = dra("claims", "--kubeconfig", str(kubeconfig), "-A", "--token", "other")
    assert "refused the --token given" in flag.stderr


def test_a_list_that_keeps_expiring_says_so(make_apiserver, kubeconfig_for, dra):
    server = make_apiserver([claim(f"c-{i:04d}", devices=()) for i in range(600)])
    server.expire_continue_tokens(times=10)
    result = dra("claims", "--kubeconfig", str(kubeconfig_for(server, namespace="ml")), "-o", "name")
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == ("error: cannot list resourceclaims.resource.k8s.io: the server's list snapshot expired while paging "
                             "(4 times, HTTP 410); the objects change faster than 500-object pages can be read. "
                             "Try again, or narrow the read with -n or -l\n")
    assert [("continue" in r.query) for r in server.list_requests("resourceclaims")] == [False, True] * 4
