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

from kubectl_dra import __version__


def test_malformed_kubeconfig(tmp_path, dra):
    path = tmp_path / "config"
    path.write_text("apiVersion: v1\nclusters:\n- name: a\n  cluster: {server: [\n")
    result = dra("claims", "--kubeconfig", str(path))
    assert result.exit_code == 3
    assert result.stderr.startswith("error: ") and str(path) in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bad_request_timeout_is_a_usage_error(tmp_path, dra):
    """The flag's value is wrong: exit 2 as for any bad flag value, said before anything is read."""
    for args in (["claims", "--request-timeout", "soon"], ["--request-timeout", "-5s", "claims"]):
        result = dra(*args, "--server", "http://127.0.0.1:1")
        assert result.exit_code == 2, (args, result)
        assert "Invalid value for '--request-timeout'" in result.stderr
    assert "use whole seconds or a number with a unit" in result.stderr or "cannot be negative" in result.stderr


def test_request_timeout_zero_means_no_timeout(tmp_path, dra):
    """kubectl's meaning; `kubectl dra options` says the same."""
    from kubectl_dra.kube.client import DEFAULT_TIMEOUT, Session
    from kubectl_dra.kube.config import ConfigFlags, load_client_config

    config = load_client_config(ConfigFlags(server="http://127.0.0.1:1", request_timeout="0"), environ={})
    assert Session(config.configuration, request_timeout=config.request_timeout).timeout is None
    unset = load_client_config(ConfigFlags(server="http://127.0.0.1:1"), environ={})
    assert Session(unset.configuration, request_timeout=unset.request_timeout).timeout == DEFAULT_TIMEOUT
    options = dra("options")
    assert "0 = no timeout, as kubectl" in " ".join(options.stdout.split())


def test_bad_label_selector_against_snapshot(dra):
    """A bad -l is a bad flag value: exit 2, in click's words, before anything is read."""
    result = dra("claims", "--snapshot", "examples/cluster", "-l", "app in (a")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == ("Error: Invalid value for '-l' / '--selector': invalid label "
                                                      'selector "app in (a": cannot parse "app in (a"')


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
    assert result.returncode == 0 and result.stdout.strip() == f"dra-node-agent, version {__version__}"


def test_nonsense_quantities_are_named_and_nothing_is_computed_from_them(tmp_path, dra):
    """A negative request and a memory limit no int64 holds: the fields are named in the API
    server's words, and neither QoS, cgroup values nor node totals are guessed from the rest."""
    import yaml
    from builders import pod

    p = pod("odd", node="worker-1")
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "-1", "memory": "1Gi"},
                                               "limits": {"memory": "1e100"}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all([p, node]))
    result = dra("explain", "pod", "odd", "-n", "ml", "--snapshot", str(tmp_path), "-o", "json")
    assert result.exit_code == 4
    doc = result.json()
    assert doc["pod"]["qosClass"] == "unknown" and doc["cgroups"]["pod"]["files"] == {}
    errors = result.stderr.splitlines()
    assert any('spec.containers[0].resources.requests.cpu: Invalid value: "-1": must be greater than or equal to 0'
               in line for line in errors), errors
    assert any('spec.containers[0].resources.limits.memory: Invalid value: "10e99": more than the scheduler and '
               "kubelet can count (int64 bytes)" in line for line in errors), errors
    node_view = dra("explain", "node", "worker-1", "--snapshot", str(tmp_path), "-o", "json")
    assert node_view.exit_code == 4
    assert "PodRequestsUnknown" in {f["code"] for f in node_view.json()["findings"]}
    assert "NodeOvercommitted" not in {f["code"] for f in node_view.json()["findings"]}


def test_a_claim_without_a_name_is_invalid_and_named_as_such(tmp_path, dra):
    """The API server requires metadata.name; an object without one cannot be told apart from the
    others, so it is skipped with a reason, and the rest of the file still loads."""
    import yaml
    from builders import claim

    nameless = claim("x", devices=[("gpu.example.com", "worker-1", "gpu-0")])
    del nameless["metadata"]["name"]
    good = claim("good", devices=[("gpu.example.com", "worker-1", "gpu-1")])
    (tmp_path / "claims.yaml").write_text(yaml.safe_dump_all([nameless, good]))
    result = dra("claims", "-A", "--snapshot", str(tmp_path), "-o", "name")
    assert result.exit_code == 4
    assert result.stdout == "resourceclaim.resource.k8s.io/good\n"
    assert "ResourceClaim ml/<unnamed>: metadata.name: Required value: name or generateName is required " \
        "(the object is skipped)" in result.stderr


def test_a_subcommand_that_cannot_be_imported_is_one_error_line(monkeypatch):
    """A broken install (a subcommand's module missing) fails before the group's callback made the
    environment: still one `error:` line and exit 3, never an AttributeError traceback."""
    import sys

    from click.testing import CliRunner

    from kubectl_dra.cli import cli

    monkeypatch.delitem(sys.modules, "kubectl_dra.cli.taints", raising=False)
    monkeypatch.setitem(sys.modules, "kubectl_dra.cli.taints", None)
    result = CliRunner().invoke(cli, ["taints"])
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output and "AttributeError" not in result.output
    assert "error: unexpected ModuleNotFoundError" in result.output or "error: unexpected ImportError" in result.output
