"""An image registry on the host's loopback, which the node VM reaches through qemu's forward: the
way the agent's image gets to nodes in a cluster. Debian's ``docker-registry`` (the distribution
registry) serves it over plain HTTP on 127.0.0.1; ``skopeo copy --preserve-digests`` pushes the OCI
archive ``scripts/build-image`` wrote, so the digest the kubelet reports is the one the build printed.
The node's containerd is told the registry speaks HTTP (``hosts.toml``, realnode.py)."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from vm import free_port

GUEST_ADDRESS = "10.0.2.101"  # where the node sees it (qemu's user network forwards it here)
GUEST_PORT = 5000
HOST = f"{GUEST_ADDRESS}:{GUEST_PORT}"  # the registry part of an image name, as the node pulls it
PUSHED: dict[str, float] = {}  # image -> seconds its push took (the tier's summary prints them)


def tools_present() -> bool:
    return shutil.which("docker-registry") is not None and shutil.which("skopeo") is not None


@dataclass
class Registry:
    workdir: Path
    port: int = 0
    process: subprocess.Popen | None = None

    def start(self) -> "Registry":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        config = self.workdir / "config.yml"
        config.write_text(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                          f"    rootdirectory: {self.workdir / 'data'}\nhttp:\n  addr: 127.0.0.1:{self.port}\n")
        log = open(self.workdir / "registry.log", "wb")
        self.process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        for _ in range(100):
            if self.process.poll() is not None:
                raise RuntimeError(f"docker-registry exited:\n{(self.workdir / 'registry.log').read_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v2/", timeout=2):
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"docker-registry did not answer:\n{(self.workdir / 'registry.log').read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def push(self, archive: Path, repository: str, tag: str) -> str:
        """``skopeo copy`` of an OCI archive; the image name the node pulls (``HOST/repository:tag``)."""
        began = time.monotonic()
        done = subprocess.run(["skopeo", "copy", "--quiet", "--preserve-digests", "--dest-tls-verify=false",
                               f"oci-archive:{archive}", f"docker://127.0.0.1:{self.port}/{repository}:{tag}"],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"skopeo copy {archive}: {done.stderr}")
        PUSHED[f"{repository}:{tag}"] = time.monotonic() - began
        return f"{HOST}/{repository}:{tag}"
