"""Bad input gets one clear line on stderr and a documented exit code, never a traceback."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest


def test_malformed_kubeconfig(tmp_path, dra):
    path = tmp_path / "config"
    path.write_text("apiVersion: v1\nclusters:\n- name: a\n  cluster: {server: [\n")
    result = dra("claims", "--kubeconfig", str(path))
    assert result.exit_code == 3
    assert result.stderr.startswith("error: ") and str(path) in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bad_request_timeout(tmp_path, dra):
    result = dra("claims", "--server", "http://127.0.0.1:1", "--request-timeout", "soon")
    assert result.exit_code == 3
    assert result.stderr.strip().startswith('error: invalid --request-timeout "soon"')


def test_bad_label_selector_against_snapshot(dra):
    result = dra("claims", "--snapshot", "examples/cluster", "-l", "app in (a")
    assert result.exit_code == 3
    assert result.stderr.strip() == 'error: invalid label selector "app in (a": cannot parse "app in (a"'


def test_unknown_flag_is_a_usage_error(dra):
    result = dra("claims", "--frobnicate")
    assert result.exit_code == 2
    assert "No such option" in result.stderr and "--frobnicate" in result.stderr


@pytest.fixture
def tls_server(tmp_path):
    """A TLS endpoint with a self-signed certificate the client does not trust."""
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(10)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                context.wrap_socket(conn, server_side=True).close()
            except (ssl.SSLError, OSError):
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()


def test_untrusted_certificate(tls_server, dra):
    result = dra("claims", "--server", tls_server, "--request-timeout", "5s")
    assert result.exit_code == 3
    line = result.stderr.strip()
    assert line.startswith(f"error: TLS error talking to {tls_server}: CERTIFICATE_VERIFY_FAILED")
    assert "--insecure-skip-tls-verify" in line and "\n" not in line


def test_node_agent_entry_point():
    result = subprocess.run([sys.executable, "-m", "node_agent", "--version"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0 and result.stdout.strip() == "dra-node-agent, version 0.1.0"
