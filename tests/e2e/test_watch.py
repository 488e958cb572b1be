"""``claims -w`` and ``taints -w`` through the real client against the fake API server, for what a
real server will not do on demand: a bookmark, a dropped stream, an expired resourceVersion (410),
a read that fails mid-watch. The real API server and scheduler are in
tests/cluster/test_watch_live.py. Each test runs about 2-4 s (the watch runs until
--request-timeout)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from builders import claim, pod, resource_slice

ROOT = Path(__file__).resolve().parents[2]
GPU = "gpu.example.com"
ALLOCATED = [(GPU, "worker-1", "gpu-0")]


def fresh(obj: dict) -> dict:
    """A changed object as a writer sends it: the server gives it a new resourceVersion."""
    obj["metadata"].pop("resourceVersion", None)
    return obj


def when_watching(server, resource: str, changes, count: int = 1) -> threading.Thread:
    """Run ``changes(server)`` in a thread once the CLI's ``count``-th watch of ``resource`` is open."""
    def run():
        deadline = time.monotonic() + 10
        while len(server.watch_requests(resource)) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)  # the request is recorded just before its stream starts
        changes(server)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def claim_lifecycle(server, name: str, user_name: str, *, add_user: bool) -> None:
    """Claim ``name`` is created pending, allocated, reserved by pod ``user_name`` (which the server
    holds only when ``add_user``), then deleted, a step every 0.2 s."""
    server.add(claim(name, devices=(), node=None))
    time.sleep(0.2)
    server.add(fresh(claim(name, devices=ALLOCATED)))
    time.sleep(0.2)
    user = pod(user_name, claims={"gpu": name})
    if add_user:
        server.add(user)
    server.add(fresh(claim(name, devices=ALLOCATED, reserved_for=[
        {"resource": "pods", "name": user_name, "uid": user["metadata"]["uid"]}])))
    time.sleep(0.2)
    server.remove("resourceclaims", name, "ml")


def claim_changes(server) -> None:
    """b is created pending, allocated, reserved by a pod, deleted."""
    claim_lifecycle(server, "b", "user", add_user=False)


@pytest.fixture
def watched(make_apiserver, kubeconfig_for):
    server = make_apiserver([claim("a", devices=(), node=None)])
    server.watch_timeout = 60.0  # the streams end when the CLI's --request-timeout says
    return server, str(kubeconfig_for(server, namespace="ml"))


@pytest.mark.parametrize("flags, expected", [
    ([], ["NAME STATE NODE DEVICES AGE",
          "a pending <none> <none> 2d4h",
          "b pending <none> <none> 2d4h",
          "b allocated worker-1 gpu-0 2d4h",
          "b allocated,reserved worker-1 gpu-0 2d4h",
          "b allocated,reserved worker-1 gpu-0 2d4h"]),  # deleted: its row as last seen, as kubectl prints it
    (["--output-watch-events"], ["EVENT NAME STATE NODE DEVICES AGE",
                                 "ADDED a pending <none> <none> 2d4h",
                                 "ADDED b pending <none> <none> 2d4h",
                                 "MODIFIED b allocated worker-1 gpu-0 2d4h",
                                 "MODIFIED b allocated,reserved worker-1 gpu-0 2d4h",
                                 "DELETED b allocated,reserved worker-1 gpu-0 2d4h"]),
    (["--watch-only", "--no-headers"], ["b pending <none> <none> 2d4h",
                                        "b allocated worker-1 gpu-0 2d4h",
                                        "b allocated,reserved worker-1 gpu-0 2d4h",
                                        "b allocated,reserved worker-1 gpu-0 2d4h"]),
    (["-o", "name"], ["resourceclaim.resource.k8s.io/a"] + ["resourceclaim.resource.k8s.io/b"] * 4),
])
def test_claims_watch_prints_the_list_then_a_row_per_change(watched, dra, flags, expected):
    server, kubeconfig = watched
    thread = when_watching(server, "resourceclaims", claim_changes)
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "2s", *flags)
    thread.join()
    assert result.exit_code == 0, result
    assert [" ".join(line.split()) for line in result.stdout.splitlines()] == expected
    assert result.stderr == ""
    (watch,) = server.watch_requests("resourceclaims")  # from the list's resourceVersion, with bookmarks
    (listed,) = server.list_requests("resourceclaims")
    assert watch.query["resourceVersion"] == "1001" and watch.query["allowWatchBookmarks"] == "true"
    assert 1 <= int(watch.query["timeoutSeconds"]) <= 2


def test_claims_watch_json_is_one_document_per_line_with_the_rows_facts(watched, dra):
    server, kubeconfig = watched
    thread = when_watching(server, "resourceclaims", claim_changes)
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "2s", "-o", "json",
                 "--output-watch-events")
    thread.join()
    assert result.exit_code == 0, result
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["type"], e["object"]["name"], e["object"]["state"], e["object"]["reservedFor"]) for e in events] == [
        ("ADDED", "a", ["pending"], []), ("ADDED", "b", ["pending"], []), ("MODIFIED", "b", ["allocated"], []),
        ("MODIFIED", "b", ["allocated", "reserved"], ["pod/user"]), ("DELETED", "b", ["allocated", "reserved"], ["pod/user"])]
    # the detailed row, computed from the pods read again at that event: the reserving pod is b's user
    assert events[3]["object"]["pods"] == [] and "PendingNoConsumers" in events[0]["object"]["findings"]


@pytest.mark.parametrize("gone", ["an ERROR event", "an answer"])
def test_an_expired_resource_version_relists_and_reports_what_changed_meanwhile(watched, dra, gone):
    """kube-apiserver says 410 Gone as an ERROR event in the stream (its watch cache) or as the
    answer to the watch request."""
    server, kubeconfig = watched
    server.add(claim("b", devices=(), node=None))

    def changes(server):
        with server._lock:  # all while the CLI is not watching: only a new list can tell
            server.add(claim("c", devices=(), node=None))
            server.add(fresh(claim("b", devices=ALLOCATED)))
            server.remove("resourceclaims", "a", "ml")
            if gone == "an answer":
                server.fail(410, resource="resourceclaims", times=1, body_reason="Expired")
            else:
                server.compact()
            server.drop_watches()

    thread = when_watching(server, "resourceclaims", changes)
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "3s", "--output-watch-events")
    thread.join()
    assert result.exit_code == 0, result
    assert [" ".join(line.split()) for line in result.stdout.splitlines()] == [
        "EVENT NAME STATE NODE DEVICES AGE",
        "ADDED a pending <none> <none> 2d4h", "ADDED b pending <none> <none> 2d4h",
        "DELETED a pending <none> <none> 2d4h",
        "MODIFIED b allocated worker-1 gpu-0 2d4h",
        "ADDED c pending <none> <none> 2d4h"]
    lists = server.list_requests("resourceclaims")
    watches = server.watch_requests("resourceclaims")
    assert len(lists) == 2  # the first list and the one after 410
    # resumed from where it was (410: compacted), then from the new list's resourceVersion
    assert [w.query["resourceVersion"] for w in watches[:3]] == ["1002", "1002", "1005"]


def test_a_dropped_stream_resumes_from_the_last_bookmark(watched, dra):
    server, kubeconfig = watched

    def changes(server):
        server.add(pod("unrelated"))  # another kind moves the resourceVersion on: 1002
        server.bookmark()  # ... and the bookmark says so to the claims watch
        time.sleep(0.2)
        server.drop_watches()
        time.sleep(0.3)
        server.add(claim("b", devices=(), node=None))

    thread = when_watching(server, "resourceclaims", changes)
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "2s", "--output-watch-events")
    thread.join()
    assert result.exit_code == 0, result
    assert [" ".join(line.split()) for line in result.stdout.splitlines()] == [
        "EVENT NAME STATE NODE DEVICES AGE", "ADDED a pending <none> <none> 2d4h",
        "ADDED b pending <none> <none> 2d4h"]
    watches = server.watch_requests("resourceclaims")
    assert [w.query["resourceVersion"] for w in watches[:2]] == ["1001", "1002"]
    assert len(server.list_requests("resourceclaims")) == 1  # resumed, not listed again


def test_the_watch_ends_when_request_timeout_elapses(watched, dra):
    server, kubeconfig = watched
    started = time.monotonic()
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "1500ms")
    took = time.monotonic() - started
    assert result.exit_code == 0, result
    assert 1.5 <= took < 4.0
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["NAME", "a"]


def test_the_watch_resumes_when_the_server_ends_each_stream(make_apiserver, kubeconfig_for, dra):
    server = make_apiserver([claim("a", devices=(), node=None)])
    server.watch_timeout = 0.5  # kube-apiserver ends a watch after its timeout; a watch goes on
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    thread = when_watching(server, "resourceclaims", lambda s: s.add(claim("b", devices=(), node=None)), count=3)
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "2500ms")
    thread.join()
    assert result.exit_code == 0, result
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["NAME", "a", "b"]
    assert len(server.watch_requests("resourceclaims")) >= 3 and len(server.list_requests("resourceclaims")) == 1


def test_a_row_that_cannot_be_computed_is_said_not_faked(watched, dra):
    """-o wide rows need the pods: when reading them fails at an event, stderr says so, no row."""
    server, kubeconfig = watched

    def changes(server):
        server.fail(500, resource="pods")
        server.add(claim("b", devices=(), node=None))

    thread = when_watching(server, "resourceclaims", changes)
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "3s", "-o", "wide")
    thread.join()
    assert result.exit_code == 4, result
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["NAME", "a"]
    assert result.stderr.startswith('error: ADDED resourceclaim "b": its row could not be made: ')
    assert "HTTP 500" in result.stderr and "Traceback" not in result.stderr


def test_a_watch_the_server_refuses_ends_with_exit_4(watched, dra):
    server, kubeconfig = watched

    def changes(server):  # RBAC changed under a running watch: the resumed stream is refused
        server.fail(403, resource="resourceclaims")
        server.drop_watches()

    thread = when_watching(server, "resourceclaims", changes)
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "3s")
    thread.join()
    assert result.exit_code == 4, result
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["NAME", "a"]
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr


@pytest.mark.parametrize("args, message", [
    (["claims", "-w", "--snapshot", "examples/cluster"], "-w/--watch follows a live cluster"),
    (["taints", "--watch-only", "--snapshot", "examples/cluster"], "-w/--watch follows a live cluster"),
    (["claims", "--output-watch-events"], "--output-watch-events can only be used with --watch or --watch-only"),
    (["taints", "-w", "--dry-run", "-f", "examples/taint-rules/drain-worker-gpu-2.yaml"], "cannot be watched"),
])
def test_watch_usage_errors(dra, args, message):
    result = dra(*[str(ROOT / a) if a.startswith("examples/") else a for a in args])
    assert result.exit_code == 2, result
    assert message in result.stderr and result.stdout == ""


def tainted_slice(taints: list[dict]) -> dict:
    return resource_slice("worker-1", GPU, [{"name": "gpu-0", "taints": taints}, {"name": "gpu-1"}])


def rule(name: str, device: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": {"driver": GPU, "pool": "worker-1", "device": device},
                     "taint": {"key": "example.com/maintenance", "effect": "NoSchedule",
                               "timeAdded": "2026-11-22T11:00:00Z"}}}


def taint_server(make_apiserver, objects):
    server = make_apiserver(objects)
    server.register("resource.k8s.io", "v1", "DeviceTaintRule", "devicetaintrules", False)  # served, none yet
    server.watch_timeout = 60.0
    return server


def test_taints_watch_prints_a_devices_rows_when_they_change(make_apiserver, kubeconfig_for, dra):
    unhealthy = {"key": "gpu.example.com/unhealthy", "effect": "NoSchedule", "timeAdded": "2026-11-22T10:00:00Z"}
    server = taint_server(make_apiserver, [tainted_slice([unhealthy]),
                                           claim("train", devices=[(GPU, "worker-1", "gpu-1")])])
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))

    def changes(server):
        server.add(rule("maintenance", "gpu-1"))  # gpu-1, held by train, is tainted now
        time.sleep(0.4)
        server.add(fresh(tainted_slice([])))  # the driver clears gpu-0's taint
        time.sleep(0.4)
        server.remove("devicetaintrules", "maintenance")

    thread = when_watching(server, "devicetaintrules", changes)
    result = dra("taints", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "3s", "--output-watch-events")
    thread.join()
    assert result.exit_code == 0, result
    assert [" ".join(line.split()) for line in result.stdout.splitlines()] == [
        "EVENT DEVICE EFFECT CLAIM PODS OUTCOME",
        "ADDED gpu.example.com/worker-1/gpu-0 NoSchedule <none> 0 -",
        "ADDED gpu.example.com/worker-1/gpu-1 NoSchedule ml/train 0 BlocksNewAllocations",
        "DELETED gpu.example.com/worker-1/gpu-0 NoSchedule <none> 0 -",
        "DELETED gpu.example.com/worker-1/gpu-1 NoSchedule ml/train 0 BlocksNewAllocations"]
    # a finding that appears during the watch is told on stderr: stdout stays rows
    assert result.stderr.startswith("Findings (1)\n  WARNING DeviceTaintedNoSchedule: device gpu.example.com/worker-1/gpu-1")
    for kind in ("resourceslices", "devicetaintrules", "resourceclaims"):
        assert server.watch_requests(kind)[0].query["allowWatchBookmarks"] == "true"


def test_taints_watch_json_lines(make_apiserver, kubeconfig_for, dra):
    server = taint_server(make_apiserver, [tainted_slice([])])
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    thread = when_watching(server, "devicetaintrules", lambda s: s.add(rule("maintenance", "gpu-0")))
    result = dra("taints", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "2s", "-o", "json")
    thread.join()
    assert result.exit_code == 0, result
    (line,) = result.stdout.splitlines()
    device = json.loads(line)
    assert device["device"] == "gpu.example.com/worker-1/gpu-0"
    assert device["taints"][0]["source"] == "rule/maintenance" and device["consumers"] == []


def test_ctrl_c_ends_the_watch_with_exit_0_and_no_traceback(make_apiserver, kubeconfig_for):
    server = make_apiserver([claim("a", devices=(), node=None)])
    server.watch_timeout = 60.0
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    for command in ("claims", "taints"):
        server.requests.clear()
        process = subprocess.Popen(
            [sys.executable, "-c", "from kubectl_dra.cli import main; main()", command, "--kubeconfig", kubeconfig,
             "-w"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            # a run started in the background of a script inherits SIGINT ignored, and Python then keeps
            # it ignored: the interrupt must reach it as a terminal's Ctrl-C reaches kubectl dra
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 20
        while not server.watch_requests() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
        assert process.returncode == 0, (command, out, err)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        assert out.split()[0] == ("NAME" if command == "claims" else "No"), out


def readme_watch_examples() -> dict[str, list[str]]:
    """The README's ``-w`` examples (tests/e2e/test_readme.py leaves them to this file)."""
    from test_readme import watches

    found, fenced, current = {}, False, None
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            fenced, current = not fenced, None
        elif fenced and line.startswith("$ kubectl dra ") and watches(line[len("$ kubectl dra "):]):
            current = found.setdefault(line[len("$ kubectl dra "):], [])
        elif fenced and current is not None:
            current.append(line)
    return found


def readme_claims(server) -> None:
    """What the claims example shows: train-gpu created, allocated, reserved by its pod, deleted."""
    claim_lifecycle(server, "train-gpu", "trainer-0", add_user=True)


def readme_taints(server) -> None:
    server.add(rule("maintenance", "gpu-1"))
    time.sleep(0.4)
    server.remove("devicetaintrules", "maintenance")


README_SCENARIOS = {  # command -> (objects before, the watched resource, the changes)
    "claims -n ml -w --output-watch-events": (lambda: [claim("spare-gpu", devices=(), node=None)],
                                              "resourceclaims", readme_claims),
    "taints -w --output-watch-events": (lambda: [tainted_slice([{"key": "gpu.example.com/unhealthy",
                                                                "effect": "NoSchedule"}]),
                                                 claim("train", devices=[(GPU, "worker-1", "gpu-1")])],
                                        "devicetaintrules", readme_taints),
}


def test_the_readme_has_a_watch_example_per_command():
    assert set(readme_watch_examples()) == set(README_SCENARIOS)


@pytest.mark.parametrize("command", sorted(README_SCENARIOS))
def test_readme_watch_example_is_what_the_command_prints(command, make_apiserver, kubeconfig_for, dra):
    import shlex

    from test_readme import matches

    objects, resource, changes = README_SCENARIOS[command]
    server = taint_server(make_apiserver, objects())
    thread = when_watching(server, resource, changes)
    result = dra(*shlex.split(command), "--kubeconfig", str(kubeconfig_for(server, namespace="ml")),
                 "--request-timeout", "2s")
    thread.join()
    assert result.exit_code == 0, result
    expected = readme_watch_examples()[command]
    assert matches(expected, result.stdout.splitlines()), result.stdout


def test_the_watch_resumes_after_the_api_server_comes_back(watched, dra):
    """The connection drops and the server refuses connections for a while: the watch resumes
    where it was (the change made meanwhile comes from the server's history, no new list)."""
    server, kubeconfig = watched

    def changes(server):
        server.stop()
        server.add(claim("b", devices=(), node=None))
        time.sleep(0.8)
        server.start()

    thread = when_watching(server, "resourceclaims", changes)
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "3s")
    thread.join()
    assert result.exit_code == 0, result
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["NAME", "a", "b"]
    assert len(server.list_requests("resourceclaims")) == 1
    assert [w.query["resourceVersion"] for w in server.watch_requests("resourceclaims")][:2] == ["1001", "1001"]


def test_a_server_still_away_when_the_time_is_up_is_said(watched, dra):
    """Not "nothing changed": the watch could not see, so stderr says so and the exit is 4."""
    server, kubeconfig = watched
    thread = when_watching(server, "resourceclaims", lambda s: s.stop())
    result = dra("claims", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "2s")
    thread.join()
    assert result.exit_code == 4, result
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["NAME", "a"]
    assert result.stderr.startswith("error: the watch of resourceclaims.resource.k8s.io could not be resumed "
                                    "before its --request-timeout ended: cannot reach the API server at ")


def test_a_reader_that_goes_away_ends_the_watch_quietly(make_apiserver, kubeconfig_for):
    """`kubectl dra claims -w | head -2`: when head exits, the next row ends the watch, with no
    error and 141, as kubectl (which dies of SIGPIPE there) ends under a shell."""
    server = make_apiserver([claim("a", devices=(), node=None)])
    server.watch_timeout = 60.0
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))
    process = subprocess.Popen(
        [sys.executable, "-c", "from kubectl_dra.cli import main; main()", "claims", "--kubeconfig", kubeconfig,
         "-w", "--request-timeout", "20s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout.readline().split()[0] == "NAME"
    assert process.stdout.readline().split()[0] == "a"
    process.stdout.close()
    for n in range(3):
        server.add(claim(f"b{n}", devices=(), node=None))
        time.sleep(0.2)
    started = time.monotonic()
    err = process.stderr.read()
    assert process.wait(timeout=15) == 141 and time.monotonic() - started < 10
    assert err == ""


def test_taints_watch_relists_after_410(make_apiserver, kubeconfig_for, dra):
    """Every watch of the view is dropped and its resourceVersion compacted while a rule is
    created: the lists again find it, and its device's row comes once."""
    server = taint_server(make_apiserver, [tainted_slice([])])
    kubeconfig = str(kubeconfig_for(server, namespace="ml"))

    def changes(server):
        with server._lock:
            server.add(rule("maintenance", "gpu-0"))
            server.compact()
            server.drop_watches()

    thread = when_watching(server, "resourceclaims", changes)
    result = dra("taints", "--kubeconfig", kubeconfig, "-w", "--request-timeout", "3s", "--output-watch-events")
    thread.join()
    assert result.exit_code == 0, result
    assert [" ".join(line.split()) for line in result.stdout.splitlines()] == [
        "No tainted devices.", "EVENT DEVICE EFFECT CLAIM PODS OUTCOME",
        "ADDED gpu.example.com/worker-1/gpu-0 NoSchedule <none> 0 -"]
    # each kind: the watch's list, the view's read, the list again after 410, the view's read after
    # the change
    for kind in ("resourceslices", "devicetaintrules", "resourceclaims"):
        assert len(server.list_requests(kind)) == 4, kind
