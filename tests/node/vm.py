"""A real cgroup v2 node for the tests: a qemu (TCG) virtual machine on this host's files.

This host's own cgroups are hybrid (v1 controllers), so a kubelet cannot enforce cgroup v2 limits
here; a guest kernel can. The guest boots Debian's generic kernel with a small busybox initramfs
(``guest/init``), which mounts the host's root read-only over 9p, builds a tmpfs root with the
host's ``/usr`` and the paths this run needs (the checkout, Python, the binaries' cache) at the
same places, and hands over to ``guest/stage2`` (cgroupfs driver) or to the host's own systemd
(systemd driver). A command server (``guest/server.py``) is how the host acts inside.

Networking is qemu's user mode with ``restrict=on``: the guest reaches nothing but the one
forward to the host's API server on 127.0.0.1 (as https://10.0.2.100:443), and the host reaches
the command server on a 127.0.0.1 port. No tap device, bridge or address leaves loopback.
Every log (console, daemons) lands in the run directory on the host, kept on failure.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from k8s_build import CACHE  # noqa: E402 - the one place cache paths are set
from waiting import Stuck, until  # noqa: E402

NODE = CACHE / "node"
NODE_BIN = NODE / "bin"
KERNEL = NODE / "kernel"
IMAGES = NODE / "images"
GUEST_PORT = 7000
APISERVER_GUEST = "10.0.2.100"
# what the guest needs as modules, in any order: their dependencies are read from each .ko
# (bridge, veth: the pods' network; nft_*: masquerading it, since qemu's network answers only 10.0.2.0/24)
# (virtio_blk, ext4: the persistent /var/lib of a node that reboots)
MODULES = ("virtio_pci", "virtio_net", "9pnet_virtio", "9p", "overlay", "virtio_rng", "bridge", "veth",
           "nft_chain_nat", "nft_masq", "virtio_blk", "ext4")
BUSYBOX = Path("/bin/busybox")
DISK_BYTES = 6 << 30


def node_binaries_present() -> bool:
    names = ("kubelet", "dra-plugin", "containerd", "containerd-shim-runc-v2", "ctr", "runc", "loopback", "bridge",
             "host-local")
    return all((NODE_BIN / n).is_file() for n in names) and (KERNEL / "vmlinuz").is_file() and \
        (IMAGES / "pause.tar").is_file() and (IMAGES / "busybox.tar").is_file() and \
        shutil.which("qemu-system-x86_64") is not None and BUSYBOX.is_file() and shutil.which("nft") is not None \
        and shutil.which("mkfs.ext4") is not None \
        and shutil.which("cpio") is not None


# -- initramfs ---------------------------------------------------------------------------------------

def _modinfo(path: Path) -> dict[str, str]:
    """``name``, ``depends`` and ``softdep`` from a module's .modinfo strings (NUL-separated key=value)."""
    info = {}
    for chunk in path.read_bytes().split(b"\0"):
        for key in (b"depends=", b"name=", b"softdep="):
            if chunk.startswith(key) and key[:-1].decode() not in info:
                info[key[:-1].decode()] = chunk[len(key):].decode(errors="replace")
    return info


def module_order(modules_dir: Path, wanted=MODULES) -> list[Path]:
    """The .ko files for ``wanted`` and everything they depend on, dependencies first; modules
    built into the kernel (modules.builtin) need no file. A soft dependency loaded first (``softdep=
    pre: crc32c``, or its alias ``crypto-crc32c``) names an algorithm: its generic implementation
    (crc32c_generic) is taken."""
    builtin = {Path(line.strip()).name.removesuffix(".ko").replace("-", "_")
               for line in (modules_dir / "modules.builtin").read_text().splitlines() if line.strip()}
    files = {}
    for directory, _, names in os.walk(modules_dir / "kernel"):
        for name in names:
            if name.endswith(".ko"):
                files[name[:-3].replace("-", "_")] = Path(directory) / name
    order: list[Path] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        name = name.replace("-", "_")
        if name in seen or name in builtin:
            return
        seen.add(name)
        if name not in files:
            raise RuntimeError(f"kernel module {name} not found in {modules_dir}")
        info = _modinfo(files[name])
        soft = info.get("softdep", "").partition("pre:")[2].partition("post:")[0].split()
        for dependency in soft:
            dependency = dependency.replace("-", "_").removeprefix("crypto_")  # an alias: crypto-crc32c
            if dependency not in builtin:
                visit(dependency if dependency in files else f"{dependency}_generic")
        for dependency in filter(None, info.get("depends", "").split(",")):
            visit(dependency)
        order.append(files[name])

    for name in wanted:
        visit(name)
    return order


def build_initramfs(out: Path) -> Path:
    """The guest's initramfs: busybox, ``guest/init`` and the kernel modules it loads, as an
    uncompressed newc archive written by Debian's cpio (what the kernel unpacks)."""
    modules = module_order(KERNEL / "modules")
    tree = out.with_suffix(".d")
    shutil.rmtree(tree, ignore_errors=True)
    (tree / "bin").mkdir(parents=True)
    (tree / "modules").mkdir()
    shutil.copy(BUSYBOX, tree / "bin" / "busybox")
    shutil.copy(HERE / "guest" / "init", tree / "init")
    (tree / "modules.order").write_text("\n".join(p.stem for p in modules) + "\n")
    for module in modules:
        shutil.copy(module, tree / "modules" / module.name)
    names = sorted(str(p.relative_to(tree)) for p in tree.rglob("*"))
    with open(out, "wb") as archive:
        subprocess.run(["cpio", "--create", "--format=newc", "--owner=0:0", "--reproducible", "--quiet"],
                       input="\n".join(names).encode() + b"\n", stdout=archive, cwd=tree, check=True)
    shutil.rmtree(tree)
    return out


# -- the VM ------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GuestError(RuntimeError):
    pass


@dataclass
class VM:
    """One boot of the node VM. ``mode``: ``cgroupfs`` (our init as PID 1) or ``systemd`` (the
    host's systemd as PID 1). ``apiserver_port``: the host's API server on 127.0.0.1."""

    workdir: Path
    name: str
    apiserver_port: int
    mode: str = "cgroupfs"
    service_ip: str | None = None  # the kubernetes Service's ClusterIP: forwarded to the API server too
    # more (guest address, guest port, host port on 127.0.0.1) forwards: the image registry
    forwards: list[tuple[str, int, int]] = field(default_factory=list)
    cpus: int = 4
    memory_mib: int = 4096
    hugepages_2m: int = 64
    hugepages_1g: int = 1
    binds: list[str] = field(default_factory=list)
    # a disk image for /var/lib (ext4, made on first start): the kubelet's and containerd's state then
    # survive a reboot (stop, start) as on a real node; without it all of the guest's root is tmpfs
    disk: Path | None = None
    process: subprocess.Popen | None = None
    port: int = 0
    booted_in: float = 0.0

    @property
    def logs(self) -> Path:
        return self.workdir / "logs"

    # -- start and stop ----------------------------------------------------------------------

    def start(self, stall: float = 180.0) -> "VM":
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        self._write_guest_files()
        initramfs = build_initramfs(self.workdir / "initramfs.cpio")
        drive = []
        if self.disk is not None:
            if not self.disk.exists():
                with open(self.disk, "wb") as image:
                    image.truncate(DISK_BYTES)  # sparse: only what the guest writes takes space
                subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "kdra-var-lib", str(self.disk)], check=True,
                               capture_output=True)
            drive = ["-drive", f"file={self.disk},format=raw,if=virtio,cache=writeback"]
        self.port = free_port()
        relay = f"{sys.executable} {HERE / 'relay.py'} 127.0.0.1 {self.apiserver_port}"
        netdev = (f"user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:{self.port}-:{GUEST_PORT},"
                  f"guestfwd=tcp:{APISERVER_GUEST}:443-cmd:{relay}")
        if self.service_ip:  # in-cluster clients (pods) dial the Service's ClusterIP: no kube-proxy needed
            netdev += f",guestfwd=tcp:{self.service_ip}:443-cmd:{relay}"
        for address, guest_port, host_port in self.forwards:
            netdev += f",guestfwd=tcp:{address}:{guest_port}-cmd:{sys.executable} {HERE / 'relay.py'} 127.0.0.1 {host_port}"
        append = ["console=ttyS0", "panic=-1", "quiet", "loglevel=4", f"hugepagesz=1G hugepages={self.hugepages_1g}",
                  f"hugepagesz=2M hugepages={self.hugepages_2m}", "default_hugepagesz=2M"]
        if self.mode == "systemd":
            append += ["systemd.unified_cgroup_hierarchy=1", "systemd.log_target=console", "systemd.show_status=0"]
        command = [
            "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "max", "-smp", str(self.cpus),
            "-m", str(self.memory_mib), "-nographic", "-no-reboot", "-nodefaults", "-monitor", "none",
            "-serial", f"file:{self.logs / 'console.log'}",
            "-kernel", str(KERNEL / "vmlinuz"), "-initrd", str(initramfs), "-append", " ".join(append),
            "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on",
            "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
            "-fsdev", f"local,id=run,path={self.workdir},security_model=none",
            "-device", "virtio-9p-pci,fsdev=run,mount_tag=run",
            "-netdev", netdev, "-device", "virtio-net-pci,netdev=net0,romfile=",
            "-device", "virtio-rng-pci", *drive,
        ]
        with open(self.logs / "qemu.log", "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)

        def up():
            if self.process.poll() is not None:
                raise Stuck(f"qemu exited with {self.process.returncode} before the guest was up\n{self.tail()}")
            self.call("status", name="-", timeout=1)
            return True

        def progress():  # what the kernel, stage 1 and systemd print on the console, and the server's log
            return sum(log.stat().st_size for log in self.logs.glob("*.log"))

        until(f"the {self.name} guest's command server", up, progress=progress, stall=stall, detail=self.tail)
        self.booted_in = time.monotonic() - began
        return self

    def _write_guest_files(self) -> None:
        python = Path(sys.base_prefix)
        binds = sorted({str(ROOT), str(python), str(CACHE.parent), *self.binds})  # the cache: binaries, images
        init = "/usr/lib/systemd/systemd" if self.mode == "systemd" else str(HERE / "guest" / "stage2")
        env = {"KDRA_BINDS": " ".join(binds), "KDRA_INIT": init, "KDRA_NODE_NAME": self.name,
               "KDRA_ROOT": str(ROOT), "KDRA_PYTHON": str(python / "bin" / "python3"), "KDRA_MODE": self.mode,
               "KDRA_DISK": "/dev/vda" if self.disk is not None else ""}
        (self.workdir / "guest.env").write_text("".join(f"{k}='{v}'\n" for k, v in env.items()))
        etc = self.workdir / "etc"
        etc.mkdir(exist_ok=True)
        (etc / "hostname").write_text(self.name + "\n")
        (etc / "hosts").write_text(f"127.0.0.1 localhost\n10.0.2.15 {self.name}\n")
        (etc / "resolv.conf").write_text("")  # no DNS: nothing outside is reachable
        (etc / "machine-id").write_text(os.urandom(16).hex() + "\n")
        if self.mode == "systemd":
            self._systemd_units(etc / "systemd" / "system", env)

    def _systemd_units(self, units: Path, env: dict[str, str]) -> None:
        """The guest's systemd starts only this: the network and the command server (no getty,
        no udev, no journald beyond its socket-activated defaults)."""
        units.mkdir(parents=True, exist_ok=True)
        (units / "kdra.target").write_text("[Unit]\nDescription=kubectl-dra node VM\n"
                                           "Wants=kdra-guest.service\nAllowIsolate=yes\n")
        (units / "kdra-guest.service").write_text(
            "[Unit]\nDescription=kubectl-dra guest command server\nDefaultDependencies=no\n\n"
            "[Service]\nType=simple\n"
            f"ExecStartPre={HERE / 'guest' / 'network'}\n"
            f"ExecStart={env['KDRA_PYTHON']} {HERE / 'guest' / 'server.py'}\n"
            "StandardOutput=append:/kdra/logs/server.log\nStandardError=inherit\n"
            "Delegate=yes\nKillMode=process\n")
        default = units / "default.target"
        if default.is_symlink() or default.exists():
            default.unlink()
        default.symlink_to("kdra.target")

    def cpu_seconds(self) -> float:
        """CPU time qemu has used so far (every vCPU thread and its own): the emulation's cost."""
        import psutil

        try:
            times = psutil.Process(self.process.pid).cpu_times()
        except (psutil.Error, AttributeError):
            return 0.0
        return times.user + times.system

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            self.call("run", argv=["sync"], timeout=10)
        except (OSError, GuestError):
            pass
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def tail(self, lines: int = 40) -> str:
        """The end of every log of this boot (console, qemu, each daemon): for failure messages."""
        parts = []
        for log in sorted(self.logs.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(parts)

    # -- acting inside -----------------------------------------------------------------------

    def call(self, op: str, **request) -> dict:
        """One request to the guest's command server; its answer, or GuestError."""
        wait = float(request.get("timeout") or 60) + 60
        with socket.create_connection(("127.0.0.1", self.port), timeout=wait) as conn:
            conn.sendall(json.dumps({"op": op, **request}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(1 << 20)
                if not chunk:
                    raise GuestError(f"guest closed the connection during {op}")
                data += chunk
        answer = json.loads(data)
        if "error" in answer:
            raise GuestError(f"{op}: {answer['error']}")
        return answer

    def run(self, *argv: str, input: str | None = None, timeout: float = 120.0, check: bool = True,
            env: dict[str, str] | None = None) -> dict:
        result = self.call("run", argv=list(argv), input=input, timeout=timeout, env=env or {})
        if check and result["rc"] != 0:
            raise GuestError(f"{' '.join(argv)} exited with {result['rc']}:\n{result['stdout']}\n{result['stderr']}")
        return result

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        return self.call("spawn", name=name, argv=argv, env=env or {})["pid"]

    def stop_daemon(self, name: str, sig: str = "TERM", timeout: float = 60.0) -> dict:
        return self.call("stop", name=name, signal=sig, timeout=timeout)

    def daemon_status(self, name: str) -> dict:
        return self.call("status", name=name)

    def read(self, *paths: str) -> dict[str, str | None]:
        contents = self.call("read", paths=list(paths))["contents"]
        for path, value in contents.items():
            if isinstance(value, dict):
                raise GuestError(f"cannot read {path}: {value['error']}")
        return contents

    def write(self, path: str, data: str) -> None:
        self.call("write", path=path, data=data)
