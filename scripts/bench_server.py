"""A local API server (the tests' fake) holding a synthetic cluster, in its own process, as a real
API server would be: ``python scripts/bench_server.py CLAIMS`` prints its URL once it serves
CLAIMS claims, 2 x CLAIMS pods and the slices, then serves until stdin closes;
``python scripts/bench_server.py pending NODES PODS`` serves bench.pending_cluster."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "scripts")]

from apiserver import FakeAPIServer  # noqa: E402
from bench import build_cluster, pending_cluster  # noqa: E402


class ReadOnlyServer(FakeAPIServer):
    """Nothing is written during a bench: objects are served as stored, not copied per request
    (the copy made the fake, not the command, the bottleneck at 100,000 pods)."""

    @staticmethod
    def _present(obj: dict, rt, version) -> dict:
        return obj


def main() -> None:
    if sys.argv[1] == "pending":
        objects = pending_cluster(int(sys.argv[2]), int(sys.argv[3]))
        server = ReadOnlyServer(objects).start()
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
