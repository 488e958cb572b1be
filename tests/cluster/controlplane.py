"""A real Kubernetes control plane on 127.0.0.1, for the cluster tier of the tests.

etcd, kube-apiserver (the Node authorizer and RBAC, NodeRestriction, a generated service-account
signing key, static tokens for an admin, the scheduler, the controller manager and any kubelets,
audit log) and, when asked, kube-scheduler and kube-controller-manager (the node lifecycle
controller only when real kubelets report: elsewhere the nodes are objects without kubelets). Binaries come from ``scripts/build-control-plane``. The DRA feature gates are read from
the apiserver's own ``--help``: every gate this product reads that the binary knows is turned on.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from k8s_build import BIN, CACHE, K8S_VERSION, KARPENTER_VERSION, bin_of  # the one place paths are set
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl")
KARPENTER_CRDS = CACHE / "crds" / f"karpenter-{KARPENTER_VERSION}"

WANTED_GATES = (  # what kubectl-dra reads; each is enabled when this apiserver knows it
    "DynamicResourceAllocation", "DRANodeAllocatableResources", "DRADeviceTaints", "DRADeviceTaintRules",
    "DRAWorkloadResourceClaims", "GenericWorkload", "DRAPartitionableDevices", "DRAConsumableCapacity",
    "DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus", "DRAResourcePoolStatus", "DRAExtendedResource",
    "DRAPrioritizedList", "DRAAdminAccess", "DRAListTypeAttributes", "NodeDeclaredFeatures", "PodLevelResources",
    "DRAPartitionableDevicesType",  # partitionTypeAttribute, and ResourcePoolStatusRequest's default for it
)
RUNTIME_CONFIG = ("resource.k8s.io/v1beta1=true", "resource.k8s.io/v1beta2=true", "resource.k8s.io/v1alpha3=true",
                  "scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true")
ADMIN_TOKEN = "kubectl-dra-admin-token"
STARTUP_TIMEOUT = 60.0


def binaries_present() -> bool:
    return all((BIN / name).is_file() for name in BINARIES) and (KARPENTER_CRDS / "karpenter.sh_nodeoverlays.yaml").is_file()


def started(workdir: Path, **components) -> "ControlPlane":
    """A started control plane, or a test failure naming what is missing."""
    import pytest

    if not binaries_present():
        pytest.fail(f"KUBECTL_DRA_REQUIRE_CONTROL_PLANE=1 but the control plane binaries are missing in {BIN}")
    return ControlPlane(workdir, **components).start()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def known_gates(apiserver: Path) -> dict[str, str]:
    """Gate -> stage ("ALPHA - default=false", "GA - default=true"...) from the binary's help text."""
    help_text = subprocess.run([str(apiserver), "--help"], capture_output=True, text=True, timeout=60).stdout
    return {m.group(1): m.group(2) for m in re.finditer(r"kube:(\w+)=true\|false \(([^)]*)\)", help_text)}


def gate_flag(known: dict[str, str]) -> str:
    """Every wanted gate the binary knows and does not lock: explicitly on."""
    return ",".join(f"{name}=true" for name in WANTED_GATES if name in known)


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path


@dataclass
class ControlPlane:
    workdir: Path
    scheduler: bool = False
    # more kube-scheduler profiles, beside default-scheduler (a KubeSchedulerConfiguration is written)
    scheduler_profiles: tuple[dict, ...] = ()
    controllers: bool = False
    node_lifecycle: bool = False  # the node lifecycle controller: only where real kubelets report
    extra_tokens: tuple[tuple[str, str, str, str], ...] = ()  # (token, user, uid, groups): kubelets' identities
    # Pods that run (the node tier): the ServiceAccount admission plugin mounts their tokens, and the
    # controller manager publishes kube-root-ca.crt, so in-cluster clients work as on a real cluster
    service_accounts: bool = False
    service_cidr: str = "10.0.0.0/24"  # the first address is the kubernetes Service's ClusterIP
    processes: list[Process] = field(default_factory=list)
    url: str = ""
    gates: dict[str, str] = field(default_factory=dict)
    started_in: float = 0.0
    # the skew tier (tests/skew): kube-apiserver, kube-scheduler and kube-controller-manager of this
    # release (scripts/build-skew); etcd and kubectl stay 1.37.2's
    version: str = K8S_VERSION
    # the release's own defaults: no --feature-gates, no --runtime-config (what its users run)
    defaults: bool = False

    # -- start and stop --------------------------------------------------------------------

    def start(self) -> "ControlPlane":
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._etcd()
            self._apiserver()
            if self.scheduler:
                self._component("kube-scheduler", "system:kube-scheduler",
                                ["--leader-elect=false", "--secure-port=0", *self._scheduler_config()])
            if self.controllers:
                self._component("kube-controller-manager", "system:kube-controller-manager",
                                ["--leader-elect=false", "--secure-port=0",
                                 "--controllers=*" if self.node_lifecycle else "--controllers=*,-nodelifecycle",
                                 f"--service-account-private-key-file={self.workdir / 'sa.key'}",
                                 *((f"--root-ca-file={self.ca_file}",) if self.service_accounts else ()),
                                 "--use-service-account-credentials=true"])
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Everything this control plane started, even half-started, is stopped: last started
        first, so etcd goes after the components that talk to it."""
        for proc in reversed(self.processes):
            if proc.popen.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
                try:
                    proc.popen.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.popen.kill()
                    proc.popen.wait(timeout=5)
        self.processes.clear()

    def stop_apiserver(self) -> None:
        """An API server outage begins: the process is killed, as when its machine is lost (a
        SIGTERM would drain for over a minute with the node's watches open); etcd and the other
        components keep running."""
        proc = next(p for p in self.processes if p.name == "kube-apiserver")
        self._apiserver_args = proc.popen.args[1:]
        proc.popen.kill()
        proc.popen.wait(timeout=30)

    def start_apiserver(self) -> float:
        """The outage ends: the same flags, port and data. Seconds until /readyz answers ok."""
        began = time.monotonic()
        old = next(p for p in self.processes if p.name == "kube-apiserver")
        restarted = self._spawn("kube-apiserver", self._apiserver_args, append=True)
        self.processes.remove(restarted)
        self.processes[self.processes.index(old)] = restarted
        self._wait(restarted, lambda: self._ready(), "kube-apiserver /readyz after the outage")
        return time.monotonic() - began

    def _spawn(self, name: str, args: list[str], append: bool = False) -> Process:
        log = self.workdir / f"{name}.log"
        handle = open(log, "ab" if append else "wb")
        binary = BIN / name if name in ("etcd", "kubectl") else bin_of(self.version) / name
        popen = subprocess.Popen([str(binary), *args], stdout=handle, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        handle.close()
        proc = Process(name, popen, log)
        self.processes.append(proc)
        return proc

    def _wait(self, proc: Process, ready, what: str) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if proc.popen.poll() is not None:
                raise RuntimeError(f"{proc.name} exited with {proc.popen.returncode}:\n{self.tail(proc)}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{proc.name}: {what} not ready after {STARTUP_TIMEOUT:.0f}s:\n{self.tail(proc)}")

    @staticmethod
    def tail(proc: Process, lines: int = 30) -> str:
        try:
            return "\n".join(proc.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        proc = self._spawn("etcd", [
            "--name=default", f"--data-dir={self.workdir / 'etcd'}", f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}", f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=default=http://127.0.0.1:{peer}", "--log-level=warn", "--quota-backend-bytes=2147483648",
        ])
        self._wait(proc, lambda: _http_ok(f"{self.etcd_url}/health"), "etcd")

    def _apiserver(self) -> None:
        work = self.workdir
        subprocess.run(["openssl", "genrsa", "-out", str(work / "sa.key"), "2048"], check=True, capture_output=True)
        tokens = [(ADMIN_TOKEN, "kubectl-dra-admin", "admin-uid", "system:masters"),
                  ("kubectl-dra-scheduler-token", "system:kube-scheduler", "scheduler-uid", ""),
                  ("kubectl-dra-controller-manager-token", "system:kube-controller-manager", "kcm-uid", ""),
                  *self.extra_tokens]
        (work / "tokens.csv").write_text("".join(f'{t},{u},{i},"{g}"\n' if g else f"{t},{u},{i}\n"
                                                 for t, u, i, g in tokens))
        (work / "audit-policy.yaml").write_text(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n"
            "rules:\n- level: Metadata\n")
        self.gates = known_gates(bin_of(self.version) / "kube-apiserver")
        port = free_port()
        self.url = f"https://127.0.0.1:{port}"
        self.audit_log = work / "audit.log"
        proc = self._spawn("kube-apiserver", [
            f"--etcd-servers={self.etcd_url}", "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={work / 'certs'}", f"--token-auth-file={work / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            f"--service-account-key-file={work / 'sa.key'}",
            f"--service-account-signing-key-file={work / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={self.service_cidr}",
            *(() if self.service_accounts else ("--disable-admission-plugins=ServiceAccount",)),
            *(() if self.defaults else (f"--feature-gates={gate_flag(self.gates)}",
                                        f"--runtime-config={','.join(RUNTIME_CONFIG)}")),
            f"--audit-policy-file={work / 'audit-policy.yaml'}", f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
        ])
        self._wait(proc, lambda: self._ready(), "kube-apiserver /readyz")

    def _ready(self) -> bool:
        try:
            return self.request("GET", "/readyz", raw=True) == "ok"
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False

    def _component(self, name: str, user: str, extra: list[str]) -> None:
        token = {"system:kube-scheduler": "kubectl-dra-scheduler-token",
                 "system:kube-controller-manager": "kubectl-dra-controller-manager-token"}[user]
        kubeconfig = self.kubeconfig(self.workdir / f"{name}.kubeconfig", token=token, user=user)
        gates = () if self.defaults else (f"--feature-gates={gate_flag(self.gates)}",)
        proc = self._spawn(name, [f"--kubeconfig={kubeconfig}", *gates, *extra])
        if name == "kube-controller-manager":  # running controllers: the default ServiceAccount appears
            self._wait(proc, lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/default"),
                       "the serviceaccount controller")
        else:  # the scheduler serves nothing with --secure-port=0: its log says when it runs
            self._wait(proc, lambda: b"Starting Kubernetes Scheduler" in proc.log.read_bytes(), "kube-scheduler")

    def _scheduler_config(self) -> list[str]:
        """``--config`` with the extra profiles (the default one first, unchanged), or nothing."""
        if not self.scheduler_profiles:
            return []
        import yaml

        path = self.workdir / "kube-scheduler.yaml"
        path.write_text(yaml.safe_dump({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(self.workdir / "kube-scheduler.kubeconfig")},
            "leaderElection": {"leaderElect": False},
            "profiles": [{"schedulerName": "default-scheduler"}, *self.scheduler_profiles]}, sort_keys=False))
        return [f"--config={path}"]

    def absent(self, path: str) -> bool:
        """The API server answers 404 for ``path`` (any other refusal is not "absent")."""
        try:
            self.request("GET", path)
            return False
        except urllib.error.HTTPError as exc:
            return exc.code == 404

    def _exists(self, path: str) -> bool:
        try:
            self.request("GET", path)
            return True
        except urllib.error.HTTPError:
            return False

    # -- clients -----------------------------------------------------------------------------

    @property
    def ca_file(self) -> Path:
        return self.workdir / "certs" / "apiserver.crt"

    def kubeconfig(self, path: Path, *, token: str = ADMIN_TOKEN, user: str = "admin",
                   namespace: str = "default") -> Path:
        """A kubeconfig a user would have: the server's CA, a bearer token, a context."""
        import yaml

        config = {"apiVersion": "v1", "kind": "Config", "current-context": "real",
                  "clusters": [{"name": "real", "cluster": {"server": self.url,
                                                            "certificate-authority": str(self.ca_file)}}],
                  "users": [{"name": user, "user": {"token": token}}],
                  "contexts": [{"name": "real", "context": {"cluster": "real", "user": user,
                                                            "namespace": namespace}}]}
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def request(self, method: str, path: str, body=None, *, token: str = ADMIN_TOKEN, raw: bool = False,
                content_type: str = "application/json"):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": content_type})
        context = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file.exists() else \
            ssl._create_unverified_context()  # noqa: S323 - only before the CA file exists (startup probe)
        with urllib.request.urlopen(req, context=context, timeout=30) as response:
            text = response.read().decode()
        return text if raw else json.loads(text) if text else None

    def kubectl(self, *args: str, input: str | None = None, check: bool = True, kubeconfig: Path | None = None
                ) -> subprocess.CompletedProcess:
        admin = self.workdir / "admin.kubeconfig"
        config = kubeconfig or (admin if admin.exists() else self.kubeconfig(admin))  # written once: threads call this
        result = subprocess.run([str(BIN / "kubectl"), f"--kubeconfig={config}", *args], input=input,
                                capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
        return result

    def audit(self, stage: str | None = "ResponseComplete") -> list[dict]:
        """Every request the API server saw (by default its ResponseComplete events; ``stage=None``:
        every event, with the ResponseStarted that marks a watch's open)."""
        events = []
        for line in self.audit_log.read_text().splitlines():
            event = json.loads(line)
            if stage is None or event.get("stage") == stage:
                events.append(event)
        return events

    def audit_mark(self) -> int:
        return len(self.audit())

    def requests_since(self, mark: int, user: str | None = None) -> list[dict]:
        """Resource requests (with an objectRef) made after ``mark``, by ``user`` if given."""
        time.sleep(0.3)  # the log backend writes a moment after the response
        return [e for e in self.audit()[mark:] if e.get("objectRef") and
                (user is None or e["user"]["username"] == user)]

    def service_account_token(self, namespace: str, name: str) -> str:
        """A bound token for a ServiceAccount (TokenRequest), as `kubectl create token` makes."""
        review = self.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                              {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                               "spec": {"expirationSeconds": 3600}})
        return review["status"]["token"]

    def can(self, user: str, verb: str, resource: str, group: str = "", *, subresource: str = "",
            namespace: str = "", groups: tuple[str, ...] = ()) -> bool:
        """The real authorizer's answer (a SubjectAccessReview as the admin)."""
        attributes = {"verb": verb, "resource": resource, "group": group}
        if subresource:
            attributes["subresource"] = subresource
        if namespace:
            attributes["namespace"] = namespace
        review = self.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                              {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                               "spec": {"user": user, "groups": list(groups), "resourceAttributes": attributes}})
        return bool(review["status"].get("allowed"))


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def which_go() -> str | None:
    return shutil.which("go")
