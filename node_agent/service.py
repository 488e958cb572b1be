"""The DaemonSet service loop (one scan from a node shell is once.py).

The service keeps serving the last report while the API server is away, reconnects with
backoff, and rescans when what it watches changes (its node's pods, its Node, their claims:
cache.py) or every ``interval`` seconds. A scan reads the API from those watches, so an idle
node costs the API server its open watches and nothing else.
"""

from __future__ import annotations

import signal
import threading
import time
import traceback
from dataclasses import dataclass, field

from kubectl_dra.env import Environment
from kubectl_dra.errors import ApiError, DRAError
from kubectl_dra.kube.sources import open_source
from kubectl_dra.model.node import Node
from kubectl_dra.nodescan.node import HostPaths, NodeScan, choose_node
from kubectl_dra.printers.options import OutputOptions
from kubectl_dra.verify.report import NodeEnforcementReport
from node_agent.cache import WatchedSource
from node_agent.netns import check_network
from node_agent.podresources import list_pod_resources
from node_agent.publish import Metrics, Publisher
from node_agent.server import serve

MAX_BACKOFF = 60.0


@dataclass
class AgentConfig:
    node: str
    cgroup_root: str = "/sys/fs/cgroup"
    sys_root: str | None = None
    listen: str = "0.0.0.0:8080"
    interval: float = 60.0
    publish: bool = True
    check_network: bool = False
    proc_root: str = "/proc"
    node_flags: dict = field(default_factory=dict)
    watch_timeout: float = 300.0  # a watch stream lasts this to twice this (client-go's 5-10 minutes)
    kubelet_root: str | None = None
    cdi_dirs: tuple[str, ...] | None = None

    @property
    def host(self) -> HostPaths:
        return HostPaths(cgroup_root=self.cgroup_root, sys_root=self.sys_root, kubelet_root=self.kubelet_root,
                         cdi_dirs=self.cdi_dirs, proc_root=self.proc_root)


class Agent:
    def __init__(self, config: AgentConfig, kube, env: Environment | None = None):
        self.config, self.kube = config, kube
        self.env = env or Environment()
        self.metrics = Metrics(config.node)
        if config.publish:
            self.metrics.last_publish.labels(config.node).set(0)  # publishing, nothing written yet
        self.report: NodeEnforcementReport | None = None
        self.predictions: dict = {}  # scan's cache: unchanged pods are not predicted again
        self.said: set[str] = set()  # warnings already logged
        self.heartbeat = time.monotonic()
        self.stop = threading.Event()
        self.trigger = threading.Event()
        self.session = None
        self.source = None
        self.scanner: NodeScan | None = None
        self.publisher = None
        self.server = None

    # -- the pieces a test drives one at a time --------------------------------------------

    def connect(self) -> None:
        opened = open_source(self.kube, http2=True)  # one connection for every watch, as a kubelet
        for notice in opened.notices:
            self.env.error(notice)
        self.source = opened.source
        self.session = getattr(opened.source, "session", None)
        if opened.live:
            self.source = WatchedSource(opened.source, self.trigger.set, stream_seconds=self.config.watch_timeout,
                                        warn=lambda message: self._say_once("warning", message))
        self.scanner = NodeScan(self.source, self.config.node, self.config.node_flags, self.config.host,
                                name_source="--node or NODE_NAME", list_pod_resources=list_pod_resources,
                                cache=self.predictions)

    def _say_once(self, severity: str, message: str) -> None:
        """A warning or error the node gives: once per agent, not once per scan."""
        if message not in self.said:
            self.said.add(message)
            self.env.error(f"{severity}: {message}")

    def scan_once(self) -> NodeEnforcementReport:
        """Read, compare, record metrics; publish when enabled. API failures raise ApiError."""
        started = time.perf_counter()
        result = self.scanner.run()
        if isinstance(self.source, WatchedSource):  # claims no pod here uses any more: stop watching them
            self.source.sweep()
            self.metrics.watches.labels(self.config.node).set(self.source.open_watches())
            self.metrics.lists.labels(self.config.node).set(self.source.lists)
        report, inventory = result.report, result.inventory
        for severity, problem in result.problems:
            self._say_once(severity, problem)
        if self.config.check_network:
            check_network(report, inventory, self.source, self.scanner.fs, self.config.proc_root)
            report.summarize()
        if self.stop.is_set():  # shutting down: this scan may be cut short; keep the last report
            return report
        self.metrics.record(report, time.perf_counter() - started)
        self.report = report
        if self.config.publish and self.session is not None:
            if self.publisher is None:
                node = inventory.get(Node, None, self.config.node)
                self.publisher = Publisher(self.session, self.config.node, node.uid if node else None)
            try:
                self.publisher.report(report)
                if self.publisher.current(report):
                    self.metrics.last_publish.labels(self.config.node).set(time.time())
                self.publisher.events(report)
            except ApiError as exc:
                self.metrics.errors.labels(self.config.node, "publish").inc()
                exc.agent_stage_counted = True  # the loop must not count it again as a "scan" error
                raise
        return report

    def healthy(self) -> bool:
        return time.monotonic() - self.heartbeat < max(3 * self.config.interval, 30)

    def ready(self) -> bool:
        return self.report is not None

    def report_document(self) -> dict | None:
        return self.report.model_dump(mode="json", by_alias=True) if self.report else None

    # -- the service -------------------------------------------------------------------------

    def start_http(self):
        self.server = serve(self.config.listen, self.metrics.registry, self.healthy, self.ready, self.report_document)
        return self.server

    def loop(self) -> None:
        backoff = 1.0
        while not self.stop.is_set():
            self.heartbeat = time.monotonic()
            try:
                if self.session is None:
                    self.connect()
                self.scan_once()
                backoff = 1.0
                wait = self.config.interval
            except Exception as exc:  # noqa: BLE001 - even a bug must not crash-loop the DaemonSet and lose the report
                if not getattr(exc, "agent_stage_counted", False):
                    stage = "scan" if isinstance(exc, DRAError) else "internal"
                    self.metrics.errors.labels(self.config.node, stage).inc()
                self.env.error(self._failure(exc))
                wait = backoff
                backoff = min(backoff * 2, MAX_BACKOFF)
            self.trigger.wait(wait)
            self.trigger.clear()

    def _failure(self, exc: Exception) -> str:
        """What a failed scan says: an API or node error in a line; anything else is a bug, with its
        traceback the first time and a line after."""
        if isinstance(exc, DRAError):
            return f"scan failed (keeping the last report): {exc}"
        said = f"internal: {type(exc).__name__}: {exc}"
        if said in self.said:
            return f"scan failed unexpectedly (keeping the last report): {said}"
        self.said.add(said)
        return ("scan failed unexpectedly (this is a bug; keeping the last report):\n"
                + "".join(traceback.format_exception(exc)).rstrip())

    def shutdown(self, *_) -> None:
        """SIGTERM and SIGINT: end now. The loop wakes from its wait; a scan in flight is abandoned
        (``scan_once`` publishes nothing once ``stop`` is set), so the DaemonSet's pod exits within a
        second instead of after its grace period's SIGKILL."""
        self.stop.set()
        self.trigger.set()
        if isinstance(self.source, WatchedSource):
            self.source.close()

    def start(self) -> None:
        """Connect (or say why not yet: the loop retries) and start the scan loop in a daemon
        thread (its first scan opens the watches); ``shutdown`` ends both. The service and the
        benchmark's many agents in one process start here."""
        try:
            self.connect()
        except DRAError as exc:
            self.env.error(f"cannot connect yet: {exc}")
        threading.Thread(target=self.loop, name="scan", daemon=True).start()

    def serve_forever(self) -> int:
        """Serve until SIGTERM/SIGINT. The scan loop runs in a daemon thread, so a scan blocked in
        a read never holds the exit; the main thread only waits for ``stop``."""
        signal.signal(signal.SIGTERM, self.shutdown)
        signal.signal(signal.SIGINT, self.shutdown)
        if self.server is None:
            self.start_http()
        self.start()
        while not self.stop.wait(1.0):  # a timed wait, so the signal handler runs promptly
            pass
        self.server.shutdown()
        self.server.server_close()
        return 0
