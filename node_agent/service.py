"""The agent's two modes: one scan for a node shell, and the DaemonSet service loop.

The service keeps serving the last report while the API server is away, reconnects with
backoff, and rescans when this node's pods change (a watch) or every ``interval`` seconds.
"""

from __future__ import annotations

import signal
import socket
import threading
import traceback
import time
from dataclasses import dataclass, field

from kubectl_dra.env import Environment
from kubectl_dra.errors import ApiError, DRAError, NotFoundError
from kubectl_dra.kube.reads import ReadRequest
from kubectl_dra.model.inventory import Inventory
from kubectl_dra.model.node import Node
from kubectl_dra.model.pod import Pod
from kubectl_dra.verify.report import NodeEnforcementReport
from node_agent.cgroupfs import CgroupFS
from node_agent.kubeletstate import read_kubelet_state
from node_agent.scan import scan

MAX_BACKOFF = 60.0


def node_requests(node: str) -> list[ReadRequest]:
    """Only this node's pods (fieldSelector) and its Node object: two list calls per scan."""
    return [ReadRequest(Pod, None, field_selector=f"spec.nodeName={node}", keep_raw=False),
            ReadRequest(Node, field_selector=f"metadata.name={node}", required=False, keep_raw=False)]


def read_claims(source, keys) -> tuple[dict, list[str]]:
    """The API's answer for each claim the node involves: the object, None when the list came back
    without it (it does not exist), or no entry when it could not be read. One small list per claim
    (fieldSelector metadata.name), never every claim of the cluster."""
    from kubectl_dra.model.claim import ResourceClaim

    claims, problems = {}, []
    for namespace, name in keys:
        inventory = source.read([ReadRequest(ResourceClaim, namespace, field_selector=f"metadata.name={name}",
                                             keep_raw=False)])
        if "ResourceClaim" in inventory.read_kinds and not inventory.problems:
            claims[(namespace, name)] = inventory.get(ResourceClaim, namespace, name)
        else:
            problems += [p.message for p in inventory.problems if p.message not in problems]
    return claims, problems


def node_dra_state(source, inventory: Inventory, node: str, kubelet_root: str | None, cdi_dirs):
    """The node's DRA state and the API's claims it involves, plus what could not be read."""
    from kubectl_dra.nodestate.reconcile import claim_keys_to_read
    from kubectl_dra.verify.crosscheck import pods_on
    from node_agent.nodedra import read_node_dra

    state = read_node_dra(kubelet_root, cdi_dirs)
    if not state.usable:
        return state, {}, []
    claims, problems = read_claims(source, claim_keys_to_read(pods_on(inventory, node), state))
    return state, claims, problems


def choose_node(given: str | None, environ) -> tuple[str, str]:
    """The node to check and where its name came from: --node, $NODE_NAME, or this host's name."""
    if given:
        return given, "--node"
    if environ.get("NODE_NAME"):
        return environ["NODE_NAME"], "NODE_NAME"
    return socket.gethostname(), "hostname"


def check_node(inventory: Inventory, name: str, source: str, where: str) -> None:
    """A node name that is no Node is an error, never "0 pods, all match". (When Nodes could not
    be read at all, that problem is reported instead and the name is taken as given.)"""
    if "Node" not in inventory.read_kinds or inventory.get(Node, None, name) is not None:
        return
    if source == "hostname":
        raise NotFoundError(f'this host\'s name "{name}" is not a Node in {where}: pass --node NAME (or set NODE_NAME '
                            "to the node's name)")
    raise NotFoundError(f'node "{name}" not found in {where} (from {source})')


def exit_code(report: NodeEnforcementReport) -> int:
    """kubectl dra's table: 0 everything checked held (or nothing to check); 1 a divergence or a claim
    finding (error or warning), which outranks 4; 2 a root that is no cgroup v2 tree (a bad
    --cgroup-root); 4 partial: pods whose cgroups could not be read."""
    if report.status.summary.diverged or report.status.summary.claim_findings:
        return 1
    if report.status.cgroup_version != "v2":
        return 2
    return 4 if report.status.summary.unknown else 0


def run_scan_once(kube, node_flags: dict, node: str | None, cgroup_root: str, sys_root: str | None,
                  output_format: str, no_headers: bool, env: Environment | None = None,
                  kubelet_root: str | None = None, cdi_dirs: tuple[str, ...] | None = None) -> int:
    from kubectl_dra.kube.sources import open_source
    from kubectl_dra.printers.problems import problem_lines
    from kubectl_dra.printers.documents import to_json, to_yaml
    from kubectl_dra.printers.reports import claims_table, divergence_table, options_lines, summary_line, unverified_pods
    from kubectl_dra.text import plural
    from kubectl_dra.printers.style import Style

    env = env or Environment()
    name, source = choose_node(node, env.environ)
    inventory = None
    try:
        opened = open_source(kube)
        for notice in opened.notices:
            env.error(notice)
        inventory = opened.source.read(node_requests(name))
        check_node(inventory, name, source, opened.source.description)
        kubelet = read_kubelet_state(kubelet_root)
        node_dra, claims, claim_problems = node_dra_state(opened.source, inventory, name, kubelet_root, cdi_dirs)
        report = scan(name, inventory, CgroupFS(cgroup_root, sys_root), node_flags, kubelet=kubelet,
                      node_dra=node_dra, claims=claims)
    except DRAError as exc:
        for line in problem_lines(inventory) if inventory is not None else ():
            env.error(line)
        env.error(f"error: {exc}")
        return 3  # nothing shown: the node is no Node, the API server cannot be read
    for problem in kubelet.problems:
        env.error(f"warning: {problem}")
    for source in report.status.sources:
        if source.state in ("absent", "unreadable", "corrupt"):  # README: each is said on stderr
            env.error(f"{'error' if source.state == 'corrupt' else 'warning'}: {source.path}: {source.message}")
    for problem in claim_problems:
        env.error(f"warning: claims not compared with the node: {problem}")
    if output_format == "json":
        env.write(to_json(report))
    elif output_format == "yaml":
        env.write(to_yaml(report))
    else:
        if report.status.cgroup_version == "v2":  # otherwise every pod would repeat the same reason
            env.write(divergence_table([report], no_headers=no_headers, wide=output_format == "wide",
                                       style=Style(env.use_color)))
        if report.status.claims:
            env.write(claims_table([report], no_headers=no_headers, wide=output_format == "wide",
                                   style=Style(env.use_color)))
        say = env.error if no_headers else env.write  # --no-headers output is for pipes: prose to stderr
        say(summary_line([report]) + "\n")
        for line in options_lines([report]):
            say(line + "\n")
    if report.status.message:
        env.error(f"error: {report.status.message}")
    for line in problem_lines(inventory):
        env.error(line)
    code = exit_code(report)
    if code == 4:
        env.error(f"warning: {plural(report.status.summary.unknown, 'pod')} not verified: the result is partial: "
                  f"{unverified_pods([report])}")
    return code


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
    watch_timeout: float = 300.0
    kubelet_root: str | None = None
    cdi_dirs: tuple[str, ...] | None = None


class Agent:
    def __init__(self, config: AgentConfig, kube, env: Environment | None = None):
        from node_agent.publish import Metrics

        self.config, self.kube = config, kube
        self.env = env or Environment()
        self.fs = CgroupFS(config.cgroup_root, config.sys_root)
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
        self.publisher = None
        self.server = None

    # -- the pieces a test drives one at a time --------------------------------------------

    def connect(self) -> None:
        from kubectl_dra.kube.sources import open_source

        opened = open_source(self.kube)
        for notice in opened.notices:
            self.env.error(notice)
        self.source = opened.source
        self.session = getattr(opened.source, "session", None)

    def scan_once(self) -> NodeEnforcementReport:
        """Read, compare, record metrics; publish when enabled. API failures raise ApiError."""
        started = time.perf_counter()
        inventory: Inventory = self.source.read(node_requests(self.config.node))
        check_node(inventory, self.config.node, "--node or NODE_NAME", self.source.description)
        kubelet = read_kubelet_state(self.config.kubelet_root)
        for problem in kubelet.problems:
            if problem not in self.said:  # once per agent, not once per scan
                self.said.add(problem)
                self.env.error(f"warning: {problem}")
        node_dra, claims, claim_problems = node_dra_state(self.source, inventory, self.config.node,
                                                          self.config.kubelet_root, self.config.cdi_dirs)
        for problem in [*(f"{s.path}: {s.message}" for s in node_dra.sources if s.state in ("absent", "unreadable", "corrupt")),
                        *(f"claims not compared with the node: {p}" for p in claim_problems)]:
            if problem not in self.said:
                self.said.add(problem)
                self.env.error(f"warning: {problem}")
        report = scan(self.config.node, inventory, self.fs, self.config.node_flags, cache=self.predictions,
                      proc_root=self.config.proc_root, kubelet=kubelet, node_dra=node_dra, claims=claims)
        if self.config.check_network:
            from node_agent.netns import check_network

            check_network(report, inventory, self.source, self.fs, self.config.proc_root)
            report.summarize()
        if self.stop.is_set():  # shutting down: this scan may be cut short; keep the last report
            return report
        self.metrics.record(report, time.perf_counter() - started)
        self.report = report
        if self.config.publish and self.session is not None:
            if self.publisher is None:
                from node_agent.publish import Publisher

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
        from node_agent.server import serve

        self.server = serve(self.config.listen, self.metrics.registry, self.healthy, self.ready, self.report_document)
        return self.server

    def watch_pods(self) -> None:
        """Set ``trigger`` whenever this node's pods change; reconnects quietly on errors."""
        backoff = 1.0
        while not self.stop.is_set():
            try:
                query = [("fieldSelector", f"spec.nodeName={self.config.node}"),
                         ("timeoutSeconds", str(int(self.config.watch_timeout)))]
                for event in self.session.watch("/api/v1/pods", query, timeout=self.config.watch_timeout + 5):
                    backoff = 1.0
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self.trigger.set()
                    if self.stop.is_set():
                        return
            except (ApiError, AttributeError):
                self.stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)

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

    def serve_forever(self) -> int:
        """Serve until SIGTERM/SIGINT. The scan loop runs in a daemon thread, so a scan blocked in
        a read never holds the exit; the main thread only waits for ``stop``."""
        signal.signal(signal.SIGTERM, self.shutdown)
        signal.signal(signal.SIGINT, self.shutdown)
        if self.server is None:
            self.start_http()
        try:
            self.connect()
        except DRAError as exc:
            self.env.error(f"cannot connect yet: {exc}")
        if self.session is not None:
            threading.Thread(target=self.watch_pods, name="watch", daemon=True).start()
        threading.Thread(target=self.loop, name="scan", daemon=True).start()
        while not self.stop.wait(1.0):  # a timed wait, so the signal handler runs promptly
            pass
        self.server.shutdown()
        self.server.server_close()
        return 0
