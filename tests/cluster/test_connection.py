"""The connection as the real API server's TLS sees it: a certificate we cannot verify is one
error after one attempt, --insecure-skip-tls-verify is one warning line, and a refused token
names the credential. A counting TCP proxy in front of the server shows how many times we tried."""

from __future__ import annotations

import socket
import threading

import pytest
import yaml


class CountingProxy:
    """Forwards TCP to the API server and counts the connections made to it."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def proxy(apiserver_only):
    host, port = apiserver_only.url.removeprefix("https://").rsplit(":", 1)
    p = CountingProxy((host, int(port)))
    yield p
    p.close()


def kubeconfig(path, server: str, cluster_extra: dict, token: str) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "real",
        "clusters": [{"name": "real", "cluster": {"server": server, **cluster_extra}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "real", "context": {"cluster": "real", "user": "admin"}}]}))
    return str(path)


def test_an_unverifiable_certificate_is_one_error_after_one_attempt(proxy, dra, tmp_path):
    from controlplane import ADMIN_TOKEN

    server = f"https://127.0.0.1:{proxy.port}"
    config = kubeconfig(tmp_path / "no-ca", server, {}, ADMIN_TOKEN)  # the system CAs do not know this server
    result = dra("claims", "--kubeconfig", config)
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == (f"error: TLS error talking to {server}: CERTIFICATE_VERIFY_FAILED (check "
                             "certificate-authority, or --insecure-skip-tls-verify for a test cluster)\n")
    assert proxy.connections == 1, "a certificate that failed verification will fail again: no retry"


def test_insecure_skip_tls_verify_warns_once(proxy, dra, tmp_path):
    from controlplane import ADMIN_TOKEN

    server = f"https://127.0.0.1:{proxy.port}"
    config = kubeconfig(tmp_path / "insecure", server, {}, ADMIN_TOKEN)
    result = dra("explain", "node", "nowhere", "--kubeconfig", config, "--insecure-skip-tls-verify")
    assert result.stderr.splitlines()[0] == (
        f"warning: not verifying the certificate of {server} (--insecure-skip-tls-verify): anyone on the path "
        "can read and change this traffic")
    assert result.stderr.count("warning") == 1 and "InsecureRequestWarning" not in result.stderr
    assert result.stderr.splitlines()[1:] == ['error: node "nowhere" not found']
    assert result.exit_code == 3 and proxy.connections >= 1
    in_file = dra("claims", "-A", "--kubeconfig",
                  kubeconfig(tmp_path / "insecure-file", server, {"insecure-skip-tls-verify": True}, ADMIN_TOKEN))
    assert in_file.exit_code == 0 and in_file.stderr.count("warning: not verifying the certificate") == 1


def test_a_refused_token_names_the_user_and_context(apiserver_only, dra, tmp_path):
    config = apiserver_only.kubeconfig(tmp_path / "bad", token="not-a-token")
    result = dra("claims", "--kubeconfig", str(config))
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr == (f'error: the API server at {apiserver_only.url} refused user "admin" of context "real" '
                             "(bearer token): Unauthorized (HTTP 401)\n")
