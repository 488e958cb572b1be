"""A real Kubernetes node in the VM (vm.py), joined to the tests' real control plane.

containerd (with runc and the loopback CNI plugin), the kubelet with a node identity
(``system:node:<name>`` in ``system:nodes``: the Node authorizer and NodeRestriction apply to it),
and a DRA kubelet plugin (the upstream e2e test driver) that registers with the kubelet, publishes
the node's ResourceSlice and prepares claims with CDI specs. The scheduler places every pod; the
node lifecycle controller lifts the not-ready taint. Settings that the tests vary (cgroup driver,
CPU manager policy, feature gates, containerd's hugetlb controller) are fields of
:class:`KubeletSettings` and :class:`ContainerdSettings`; changing them restarts the daemon.
"""

from __future__ import annotations

import ipaddress
import json
import time
from datetime import datetime, timezone
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from apiwatch import Watch
from vm import IMAGES, NODE_BIN, VM, GuestError
from waiting import Stuck, until

DRIVER = "node.kubectl-dra.test"
DRIVER_NAMESPACE = "kube-system"
KUBELET_ROOT = "/var/lib/kubelet"
CDI_DIR = "/var/run/cdi"
GUEST_RUN = "/kdra"  # the run directory as the guest sees it
TEST_IMAGE = "kubectl-dra.test/busybox:1"
# a step of a node's start may take as long as it keeps moving; this long without any progress
# (no line from the daemon, no change to the objects watched) and it is stuck
STALL = 180.0
REGISTRY_HOSTS = "/etc/containerd/certs.d"  # containerd's config_path for registries (hosts.toml)


@dataclass(frozen=True)
class KubeletSettings:
    cgroup_driver: str = "cgroupfs"
    cpu_manager_policy: str = "none"
    reserved_cpus: str = ""  # reservedSystemCPUs: the static policy needs some
    gates: tuple[tuple[str, bool], ...] = (("DRANodeAllocatableResources", True),)
    extra: tuple[tuple[str, object], ...] = ()  # more KubeletConfiguration fields, as written

    def with_gate(self, name: str, on: bool) -> "KubeletSettings":
        return replace(self, gates=(*[(g, v) for g, v in self.gates if g != name], (name, on)))

    def config(self) -> dict:
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "cgroupDriver": self.cgroup_driver,
            "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},  # its port is reachable only inside the guest
            "readOnlyPort": 0, "failSwapOn": False, "resolvConf": "/etc/resolv.conf",
            "cpuManagerPolicy": self.cpu_manager_policy,
            "featureGates": dict(self.gates),
            # a tmpfs root and a small VM: keep eviction from tainting the node under test
            "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%",
                             "imagefs.available": "1%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False, "registerNode": True,
        }
        if self.reserved_cpus:
            config["reservedSystemCPUs"] = self.reserved_cpus
        config.update(dict(self.extra))
        return config


@dataclass(frozen=True)
class ContainerdSettings:
    systemd_cgroup: bool = False
    hugetlb_controller: bool = False  # containerd's own default: disable_hugetlb_controller = true

    def config(self) -> str:
        runtime = "plugins.'io.containerd.cri.v1.runtime'"
        return "\n".join([
            "version = 3", 'root = "/var/lib/containerd"', 'state = "/run/containerd"', "",
            "[grpc]", '  address = "/run/containerd/containerd.sock"', "",
            # registries' hosts.toml (the tier's registry speaks plain HTTP): /etc/containerd/certs.d/<host>/
            "[plugins.'io.containerd.cri.v1.images'.registry]", '  config_path = "/etc/containerd/certs.d"', "",
            f"[{runtime}]", f"  disable_hugetlb_controller = {str(not self.hugetlb_controller).lower()}",
            f"[{runtime}.cni]", f'  bin_dirs = ["{NODE_BIN}"]', '  conf_dir = "/etc/cni/net.d"',
            f"[{runtime}.containerd.runtimes.runc.options]", f'  BinaryName = "{NODE_BIN / "runc"}"',
            f"  SystemdCgroup = {str(self.systemd_cgroup).lower()}", ""])


# Pods that are not on the host network (the agent's DaemonSet) get an address on a bridge inside the
# guest; the node forwards their traffic to qemu's network, where only the API server answers.
POD_SUBNET = "10.88.0.0/24"
POD_CNI = {"cniVersion": "1.0.0", "name": "kdra-pods", "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}


@dataclass
class RealNode:
    plane: object  # controlplane.ControlPlane
    workdir: Path
    name: str
    mode: str = "cgroupfs"  # the VM's PID 1 and so the cgroup driver
    kubelet: KubeletSettings = field(default_factory=KubeletSettings)
    containerd: ContainerdSettings = field(default_factory=ContainerdSettings)
    devices: list[dict] = field(default_factory=list)  # resource.k8s.io/v1 Devices the plugin publishes
    disk: bool = False  # /var/lib on a disk image, so the node can reboot (vm.VM.disk)
    registry_port: int | None = None  # the host's image registry (registry.py), reached at registry.HOST
    vm: VM | None = None
    timings: dict[str, float] = field(default_factory=dict)
    first_start: float = 0.0  # time.monotonic() when its first VM started
    earlier_cpu: float = 0.0  # qemu CPU seconds of its VMs before a reboot

    KUBELET_TOKEN = "kubectl-dra-kubelet-token"

    @classmethod
    def token_for(cls, name: str) -> tuple[str, str, str, str]:
        """The kubelet's identity, for the control plane's token file."""
        return (f"{cls.KUBELET_TOKEN}-{name}", f"system:node:{name}", f"kubelet-{name}-uid", "system:nodes")

    # -- paths ---------------------------------------------------------------------------------

    @property
    def host_dir(self) -> Path:
        return self.workdir / "node"

    def guest(self, name: str) -> str:
        return f"{GUEST_RUN}/node/{name}"

    # -- boot ----------------------------------------------------------------------------------

    def boot(self) -> "RealNode":
        began = self.first_start = time.monotonic()
        self.host_dir.mkdir(parents=True, exist_ok=True)
        self._start_vm()
        self._write_identities()
        self._start_daemons(began, images=True)
        return self

    def reboot(self) -> dict[str, float]:
        """The node power-cycled after a sync (its disk keeps /var/lib: the kubelet's checkpoints,
        containerd's images and metadata; /run, and with it the CDI specs and every container, is
        gone), then started as at boot: containerd, the kubelet, the plugin. Seconds from the power
        cut to the guest up, the Node Ready and the slice published again."""
        assert self.vm is not None and self.vm.disk is not None, "only a node with a disk survives a reboot"
        began = time.monotonic()
        self.earlier_cpu += self.vm.cpu_seconds()
        self.vm.stop()
        self._start_vm()
        up = time.monotonic() - began
        timings = self._start_daemons(began, images=False)
        return {"vm": up, **timings}

    def _start_vm(self) -> None:
        port = int(self.plane.url.rsplit(":", 1)[1])
        service_ip = str(ipaddress.ip_network(self.plane.service_cidr)[1])
        from registry import GUEST_ADDRESS, GUEST_PORT

        forwards = [(GUEST_ADDRESS, GUEST_PORT, self.registry_port)] if self.registry_port else []
        self.vm = VM(self.workdir, name=self.name, apiserver_port=port, mode=self.mode, service_ip=service_ip,
                     disk=self.workdir / "var-lib.img" if self.disk else None, forwards=forwards).start()
        self.timings["vm"] = self.vm.booted_in

    def _start_daemons(self, began: float, images: bool) -> dict[str, float]:
        self.vm.run("mkdir", "-p", "/etc/cni/net.d", f"{KUBELET_ROOT}/plugins_registry",
                    f"{KUBELET_ROOT}/plugins/{DRIVER}", CDI_DIR, "/etc/cdi")
        self.vm.write("/etc/cni/net.d/10-kdra-pods.conflist", json.dumps(POD_CNI))
        if self.registry_port:  # the registry speaks plain HTTP, as a local one does
            from registry import HOST

            self.vm.run("mkdir", "-p", f"{REGISTRY_HOSTS}/{HOST}")
            self.vm.write(f"{REGISTRY_HOSTS}/{HOST}/hosts.toml",
                          f'server = "http://{HOST}"\n[host."http://{HOST}"]\n  capabilities = ["pull", "resolve"]\n')
        self.start_containerd()
        if images:
            for image in ("pause.tar", "busybox.tar"):
                self.ctr("images", "import", "--platform", "linux/amd64", str(IMAGES / image))
        timings = {"containerd": time.monotonic() - began}
        started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.start_kubelet()
        self.wait_ready(since=started)
        timings["ready"] = time.monotonic() - began
        self.start_plugin()
        self.wait_slices()
        timings["slices"] = time.monotonic() - began
        if images:
            self.timings.update(timings)
        return timings

    def _write_identities(self) -> None:
        """Kubeconfigs as the guest reads them: the API server at 10.0.2.100:443 (qemu's forward to
        127.0.0.1), its serving certificate as CA, checked for the name the certificate carries."""
        (self.host_dir / "ca.crt").write_bytes(self.plane.ca_file.read_bytes())
        self._kubeconfig("kubelet", f"system:node:{self.name}", self.token_for(self.name)[0])
        self.plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(driver_rbac()))
        self._kubeconfig("driver", f"{DRIVER_NAMESPACE}:dra-driver",
                         self.plane.service_account_token(DRIVER_NAMESPACE, "dra-driver"))
        (self.host_dir / "devices.json").write_text(json.dumps(self.devices))

    def _kubeconfig(self, name: str, user: str, token: str) -> str:
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "node",
                  "clusters": [{"name": "node", "cluster": {"server": "https://10.0.2.100:443",
                                                            "certificate-authority": self.guest("ca.crt"),
                                                            "tls-server-name": "kubernetes.default.svc"}}],
                  "users": [{"name": user, "user": {"token": token}}],
                  "contexts": [{"name": "node", "context": {"cluster": "node", "user": user}}]}
        (self.host_dir / f"{name}.kubeconfig").write_text(yaml.safe_dump(config, sort_keys=False))
        return self.guest(f"{name}.kubeconfig")

    def write_agent_kubeconfig(self, namespace: str = "kubectl-dra-system", account: str = "dra-node-agent") -> str:
        """The agent's own identity (its ServiceAccount from manifests/, a bound token)."""
        return self._kubeconfig("agent", f"{namespace}:{account}", self.plane.service_account_token(namespace, account))

    def cost(self) -> dict[str, float]:
        """How long the node has been up and the host CPU its VMs used meanwhile."""
        cpu = self.earlier_cpu + (self.vm.cpu_seconds() if self.vm is not None else 0.0)
        return {"up (wall s)": time.monotonic() - self.first_start, "qemu CPU s": cpu}

    def stop(self) -> None:
        if self.vm is not None:
            self.vm.stop()

    # -- daemons -------------------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        return {"PATH": f"{NODE_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

    def start_containerd(self, settings: ContainerdSettings | None = None) -> None:
        self.containerd = settings or self.containerd
        (self.host_dir / "containerd.toml").write_text(self.containerd.config())
        self.vm.spawn("containerd", [str(NODE_BIN / "containerd"), "--config", self.guest("containerd.toml")],
                      env=self.env)
        self.wait("containerd's socket", lambda: self.ctr("version", check=False)["rc"] == 0, daemon="containerd")

    def stop_containerd(self) -> None:
        self.vm.stop_daemon("containerd")

    def ctr(self, *args: str, check: bool = True) -> dict:
        return self.vm.run(str(NODE_BIN / "ctr"), "--address", "/run/containerd/containerd.sock", "-n", "k8s.io", *args,
                           check=check, env=self.env, timeout=600)

    def start_kubelet(self, settings: KubeletSettings | None = None) -> None:
        self.kubelet = settings or self.kubelet
        (self.host_dir / "kubelet.yaml").write_text(yaml.safe_dump(self.kubelet.config(), sort_keys=False))
        self.vm.spawn("kubelet", [str(NODE_BIN / "kubelet"), f"--config={self.guest('kubelet.yaml')}",
                                  f"--kubeconfig={self.guest('kubelet.kubeconfig')}", f"--hostname-override={self.name}",
                                  "--node-ip=10.0.2.15", "--v=2"], env=self.env)

    def stop_kubelet(self) -> None:
        self.vm.stop_daemon("kubelet")

    def restart_kubelet(self, settings: KubeletSettings | None = None, *, forget_cpu_state: bool = False) -> None:
        """Stop, optionally drop cpu_manager_state (a policy change requires it), start, wait Ready."""
        self.stop_kubelet()
        if forget_cpu_state:
            self.vm.run("rm", "-f", f"{KUBELET_ROOT}/cpu_manager_state")
        self.start_kubelet(settings)
        self.wait_ready()

    def start_plugin(self) -> None:
        self.vm.spawn("dra-plugin", [str(NODE_BIN / "dra-plugin"), f"--kubeconfig={self.guest('driver.kubeconfig')}",
                                     f"--node-name={self.name}", f"--driver-name={DRIVER}", f"--cdi-dir={CDI_DIR}",
                                     f"--devices={self.guest('devices.json')}", "--v=3"], env=self.env)

    def stop_plugin(self) -> None:
        self.vm.stop_daemon("dra-plugin")

    # -- waiting ---------------------------------------------------------------------------------

    def wait(self, what: str, check, *, daemon: str | None = None, stall: float = STALL, every: float = 1.0):
        """``check()``'s first truthy value, for as long as the node keeps moving: ``daemon``'s log
        growing is progress, and that daemon exiting is a failure at once (its log's end attached)."""
        log = self.vm.logs / f"{daemon}.log" if daemon else None

        def checked():
            if daemon and not self.vm.daemon_status(daemon)["running"]:
                raise Stuck(f"{what}: {daemon} exited\n{self.vm.tail()}")
            return check()

        progress = (lambda: log.stat().st_size if log.exists() else 0) if log else None
        return until(what, checked, progress=progress, stall=stall, every=every, detail=self.vm.tail)

    def node_object(self) -> dict | None:
        result = self.plane.kubectl("get", "node", self.name, "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    def wait_ready(self, since: str = "") -> dict:
        """Ready without taints; with ``since`` (RFC 3339), as posted by a kubelet heartbeat after
        it (a rebooted node's object still says Ready from before)."""
        def ready(nodes: dict[str, dict]):
            if not self.vm.daemon_status("kubelet")["running"]:
                raise Stuck(f"node {self.name} Ready: the kubelet exited\n{self.vm.tail()}")
            node = nodes.get(self.name)
            if node is None:
                return None
            conditions = {c["type"]: c for c in node["status"].get("conditions", [])}
            taints = [t["key"] for t in node["spec"].get("taints", [])]
            condition = conditions.get("Ready", {})
            fresh = condition.get("lastHeartbeatTime", "") >= since
            return node if condition.get("status") == "True" and fresh and not taints else None

        with Watch(self.plane, "/api/v1/nodes", name=self.name) as nodes:
            return nodes.until(f"node {self.name} Ready without taints", ready, stall=STALL, detail=self.vm.tail)

    def wait_slices(self) -> list[dict]:
        def published(slices: dict[str, dict]):
            if not self.vm.daemon_status("dra-plugin")["running"]:
                raise Stuck(f"{DRIVER}'s ResourceSlice: the plugin exited\n{self.vm.tail()}")
            items = [s for s in slices.values() if s["spec"]["driver"] == DRIVER and
                     s["spec"].get("nodeName") == self.name]
            return items if items and len(items[0]["spec"].get("devices", [])) == len(self.devices) else None

        with Watch(self.plane, "/apis/resource.k8s.io/v1/resourceslices") as slices:
            return slices.until(f"{DRIVER}'s ResourceSlice for {self.name}", published, stall=STALL,
                                detail=self.vm.tail)

    def apply(self, objects: list[dict]) -> None:
        """kubectl apply; again while a new namespace's default ServiceAccount does not exist yet (the
        ServiceAccount admission plugin refuses pods until the controller manager has made it)."""
        text = yaml.safe_dump_all(objects)

        def applied():
            result = self.plane.kubectl("apply", "-f", "-", input=text, check=False)
            if result.returncode != 0 and "error looking up service account" not in result.stderr:
                raise Stuck(f"kubectl apply failed:\n{result.stderr}")
            return result.returncode == 0

        until("kubectl apply (the namespace's default ServiceAccount)", applied, stall=60)

    def wait_pods(self, namespace: str, names: list[str], phase: str = "Running") -> dict[str, dict]:
        """Each pod in ``phase`` with every container started (``Running`` also needs Ready). Any
        change to the namespace's pods is progress; a stuck wait names each pod's state (the
        scheduler's message for one it could not place: claims a deleted pod still holds free up)."""
        def settled(objects: dict[str, dict]):
            pods = {n: p for n, p in objects.items() if n in names}
            if len(pods) < len(names):
                return None
            for pod in pods.values():
                if pod["status"].get("phase") != phase:
                    return None
                if phase == "Running" and not all(s.get("ready") for s in pod["status"].get("containerStatuses", [])):
                    return None
            return pods

        def describe(pod: dict) -> str:
            conditions = [f"{c['type']}={c['status']} {c.get('message', '')}".strip()
                          for c in pod["status"].get("conditions", []) if c["status"] != "True"]
            return f"{pod['status'].get('phase')} {'; '.join(conditions)}"

        with Watch(self.plane, f"/api/v1/namespaces/{namespace}/pods", describe=describe) as pods:
            return pods.until(f"pods {names} {phase} in {namespace}", settled, stall=STALL, detail=self.vm.tail)

    def pulled_in(self, image: str) -> float | None:
        """Seconds containerd took to pull ``image`` for the kubelet (its PullImage log lines), if it did."""
        began = None
        for line in (self.vm.logs / "containerd.log").read_text(errors="replace").splitlines():
            if f'msg="PullImage \\"{image}\\""' in line:
                began = _log_time(line)
            elif began is not None and f'msg="PullImage \\"{image}\\" returns' in line:
                return (_log_time(line) - began).total_seconds()
        return None

    # -- inside the node ---------------------------------------------------------------------------

    def cgroup_files(self, path: str, files: list[str]) -> dict[str, str | None]:
        base = f"/sys/fs/cgroup/{path.strip('/')}"
        contents = self.vm.read(*[f"{base}/{name}" for name in files])
        return {name: (None if contents[f"{base}/{name}"] is None else contents[f"{base}/{name}"].strip())
                for name in files}

    def agent(self, *args: str, timeout: float = 600.0) -> dict:
        """``dra-node-agent ARGS`` inside the guest, as an SRE on a node shell runs it."""
        from vm import ROOT

        return self.vm.run(str(ROOT / ".venv" / "bin" / "dra-node-agent"), *args, timeout=timeout, check=False,
                           env={"PYTHONDONTWRITEBYTECODE": "1"})

    def shell(self, script: str, timeout: float = 120.0, check: bool = True) -> dict:
        return self.vm.run("bash", "-c", script, timeout=timeout, check=check, env=self.env)


def driver_rbac() -> list[dict]:
    """What the DRA driver may do, as a driver's DaemonSet would have: publish its node's
    ResourceSlices, read the claims it prepares, read Nodes (the slice's owner)."""
    labels = {"app.kubernetes.io/part-of": "kubectl-dra-node-tier"}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "dra-driver", "namespace": DRIVER_NAMESPACE, "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "node-tier:dra-driver", "labels": labels},
         "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]},
                   {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
                   {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"],
                    "verbs": ["update", "patch"]},
                   {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "node-tier:dra-driver", "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-tier:dra-driver"},
         "subjects": [{"kind": "ServiceAccount", "name": "dra-driver", "namespace": DRIVER_NAMESPACE}]},
    ]



def _log_time(line: str) -> datetime:
    """The time of a containerd log line (``time="2026-11-29T06:07:05.910234940Z"``)."""
    stamp = line.split('time="', 1)[1].split('"', 1)[0]
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return datetime.strptime(f"{whole}.{fraction[:6] or 0}", "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc)
