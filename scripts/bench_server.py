"""A local API server (the tests' fake) holding a synthetic cluster, in its own process, as a real
API server would be: ``python scripts/bench_server.py CLAIMS`` prints its URL once it serves
CLAIMS claims, 2 x CLAIMS pods and the slices, then serves until stdin closes."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "scripts")]

from apiserver import FakeAPIServer  # noqa: E402
from bench import build_cluster  # noqa: E402


def main() -> None:
    claims = int(sys.argv[1])
    objects = build_cluster(claims, 2 * claims)
    server = FakeAPIServer(objects).start()
    del objects
    print(server.url, flush=True)
    sys.stdin.read()  # until the bench closes our stdin
    server.stop()


if __name__ == "__main__":
    main()
