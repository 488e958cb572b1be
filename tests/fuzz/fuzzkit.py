"""Shared pieces of the fuzz targets: budgets, the per-example time limit, the invariants."""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import signal
from pathlib import Path

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("ci", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "50")), derandomize=True,
                          deadline=None, database=None, print_blob=True, suppress_health_check=_SLOW_OK)
settings.register_profile("fuzz", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "2000")), deadline=None,
                          print_blob=True, suppress_health_check=_SLOW_OK)
# applied per test (``@FUZZ``), not loaded globally: the other suites keep their own settings
FUZZ = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci")
                            if os.environ.get("HYPOTHESIS_PROFILE") in ("ci", "fuzz") else "ci")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples" / "cluster")
NODE = "worker-gpu-1"# pure parsers cost milliseconds an example where a CLI run costs a second: the long run gives
# them ten times the examples (``@FUZZ_FAST``)
FUZZ_FAST = settings(FUZZ, max_examples=FUZZ.max_examples * (10 if FUZZ.derandomize is False else 1))

TIMEOUT = float(os.environ.get("FUZZ_TIMEOUT", "20"))
EXAMPLES: collections.Counter[str] = collections.Counter()


class Hang(Exception):
    """An example ran past the per-example timeout."""


@contextlib.contextmanager
def time_limit(seconds: float = TIMEOUT):
    """SIGALRM-based: interrupts a loop or a blocking read in the main thread."""
    def expire(signum, frame):
        raise Hang(f"example still running after {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def target(fn):
    """Decorate a property (under ``@given``): count its examples and bound each one in time."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        EXAMPLES[fn.__name__] += 1
        with time_limit():
            return fn(*args, **kwargs)
    return wrapper


@functools.cache
def agent_tree() -> Path:
    """worker-gpu-1's cgroup tree as the kubelet writes it, once per session."""
    import atexit
    import shutil
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from cgroup_tree import build_tree
    from kubectl_dra.cgroups.options import NodeOptions
    from kubectl_dra.kube.snapshot import load_snapshot
    from kubectl_dra.nodescan.scan import pods_on

    root = Path(tempfile.mkdtemp(prefix="fuzz-tree-"))
    atexit.register(shutil.rmtree, root, True)
    build_tree(root, pods_on(load_snapshot(Path(EXAMPLE)), NODE), NodeOptions())
    return root


# --------------------------------------------------------------------------- the invariants

DOCUMENTED_EXIT_CODES = {0, 1, 2, 3, 4}


class Run:
    def __init__(self, args, exit_code: int, stdout: str, stderr: str):
        self.args, self.exit_code, self.stdout, self.stderr = list(args), exit_code, stdout, stderr

    def __repr__(self) -> str:
        return f"Run({self.args!r}, exit={self.exit_code}, stderr={self.stderr[-600:]!r})"


def _invoke(command, args, env_obj=None) -> Run:
    from click.testing import CliRunner

    result = CliRunner().invoke(command, list(args), obj=env_obj, catch_exceptions=True,
                                prog_name="kubectl dra" if env_obj is not None else "dra-node-agent")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        if isinstance(result.exception, Hang):
            raise result.exception
        import traceback

        raise AssertionError(f"{args!r} raised {type(result.exception).__name__}: {result.exception}\n"
                             + "".join(traceback.format_exception(*result.exc_info)))
    return Run(args, result.exit_code, result.stdout, result.stderr)


def run_dra(*args: str) -> Run:
    """``kubectl dra ARGS`` through click's runner, checked against the invariants."""
    from datetime import datetime, timezone

    from kubectl_dra.cli import cli
    from kubectl_dra.env import Environment

    environment = Environment(stdout_isatty=False, environ={},
                              now=lambda: datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc))
    return check(_invoke(cli, args, environment))


def run_agent(*args: str) -> Run:
    """``dra-node-agent ARGS`` through click's runner, checked against the invariants."""
    from node_agent.__main__ import cli

    return check(_invoke(cli, args), agent=True)


def check(run: Run, agent: bool = False) -> Run:
    """No traceback, a documented exit code, and an ``error:`` line when nothing was shown."""
    assert "Traceback (most recent call last)" not in run.stderr + run.stdout, run
    assert "this is a bug" not in run.stderr, run
    assert run.exit_code in DOCUMENTED_EXIT_CODES, run
    if run.exit_code == 3:
        assert any(line.startswith("error: ") for line in run.stderr.splitlines()), run
    if run.exit_code in (2, 3, 4):
        # the agent's scan also exits 2 when pods could not be checked; its summary says so
        assert run.stderr.strip() or agent and run.exit_code == 2 and "unknown" in run.stdout, run
    return run


def names_one_of(run: Run, *causes: str) -> None:
    """The stderr of a failed or partial run names the cause (a file, a field, a flag)."""
    if run.exit_code in (2, 3, 4):
        assert any(cause and cause in run.stderr for cause in causes), (causes, run)


def paths(value, prefix=()):
    """Every path into a JSON-like value (keys and list indices), the value's own path first."""
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from paths(inner, (*prefix, index))
