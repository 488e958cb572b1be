"""The node VM's command server: how the host test harness acts inside the guest.

One JSON request per TCP connection (port 7000, reached from the host through qemu's hostfwd on
127.0.0.1), one JSON answer. Operations:

- ``run``: a command to completion: ``{argv, input, timeout, env}`` -> ``{rc, stdout, stderr}``;
- ``spawn`` / ``stop`` / ``status``: long-running daemons by name (containerd, kubelet, the DRA
  plugin, the agent), their output in ``/kdra/logs/<name>.log`` on the host's run directory, so
  the host keeps every log even if the guest hangs;
- ``read`` / ``write``: files, without a process per file (a node's cgroup files, the kubelet's
  state), for speed under emulation;
- ``http``: a GET from inside the node (a pod's endpoint on the pods' network), as a node-local
  scraper makes it: ``{url, timeout}`` -> ``{status, body}``.

Standard library only: it runs on the host's Python before anything else is set up.
"""

from __future__ import annotations

import json
import os
import signal
import socketserver
import subprocess
import threading
import time

PORT = 7000
LOGS = "/kdra/logs"
DAEMONS: dict[str, subprocess.Popen] = {}
LOCK = threading.Lock()


def run(request: dict) -> dict:
    env = {**os.environ, **request.get("env", {})}
    try:
        done = subprocess.run(request["argv"], input=request.get("input"), capture_output=True, text=True,
                              timeout=request.get("timeout", 120), env=env, cwd=request.get("cwd", "/"))
    except subprocess.TimeoutExpired as exc:
        return {"rc": -1, "stdout": _text(exc.stdout), "stderr": _text(exc.stderr) + "\n(timed out)"}
    except OSError as exc:
        return {"rc": 127, "stdout": "", "stderr": str(exc)}
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def spawn(request: dict) -> dict:
    name = request["name"]
    with LOCK:
        old = DAEMONS.get(name)
        if old is not None and old.poll() is None:
            return {"error": f"{name} is already running (pid {old.pid})"}
        log = open(os.path.join(LOGS, f"{name}.log"), "ab", buffering=0)
        log.write(f"\n==== {time.strftime('%H:%M:%S')} start {' '.join(request['argv'])}\n".encode())
        env = {**os.environ, **request.get("env", {})}
        try:
            proc = subprocess.Popen(request["argv"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True, cwd=request.get("cwd", "/"))
        except OSError as exc:
            return {"error": str(exc)}
        finally:
            log.close()
        DAEMONS[name] = proc
        return {"pid": proc.pid}


def stop(request: dict) -> dict:
    with LOCK:
        proc = DAEMONS.get(request["name"])
    if proc is None:
        return {"rc": None, "running": False}
    if proc.poll() is None:
        sig = getattr(signal, "SIG" + request.get("signal", "TERM"))
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=request.get("timeout", 30))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    return {"rc": proc.returncode, "running": False}


def status(request: dict) -> dict:
    with LOCK:
        proc = DAEMONS.get(request["name"])
    if proc is None:
        return {"running": False, "rc": None, "pid": None}
    rc = proc.poll()
    return {"running": rc is None, "rc": rc, "pid": proc.pid}


def read(request: dict) -> dict:
    contents = {}
    for path in request["paths"]:
        try:
            with open(path, "rb") as handle:
                contents[path] = handle.read().decode(errors="replace")
        except OSError as exc:
            contents[path] = None if isinstance(exc, FileNotFoundError) else {"error": str(exc)}
    return {"contents": contents}


def write(request: dict) -> dict:
    try:
        with open(request["path"], "wb") as handle:
            handle.write(request["data"].encode())
    except OSError as exc:
        return {"error": str(exc)}
    return {}


def http(request: dict) -> dict:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(request["url"], timeout=request.get("timeout", 20)) as response:
            return {"status": response.status, "body": response.read().decode(errors="replace")}
    except urllib.error.HTTPError as exc:
        return {"status": exc.code, "body": exc.read().decode(errors="replace")}
    except OSError as exc:
        return {"error": f"GET {request['url']}: {exc}"}


OPERATIONS = {"run": run, "spawn": spawn, "stop": stop, "status": status, "read": read, "write": write, "http": http}


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline()
        try:
            request = json.loads(line)
            answer = OPERATIONS[request["op"]](request)
        except Exception as exc:  # noqa: BLE001 - the host gets every failure as an answer
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main() -> None:
    os.makedirs(LOGS, exist_ok=True)
    with Server(("0.0.0.0", PORT), Handler) as server:
        print(f"guest server listening on {PORT}", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    main()
