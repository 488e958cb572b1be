"""kubectl_dra.kube.config: kubeconfig selection, merging and overrides exactly like kubectl.

Every test passes ``environ`` (and a home directory) explicitly, so neither the real
environment nor the client's import-time ``KUBECONFIG`` default can leak in.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from kubectl_dra.errors import ConfigError
from kubectl_dra.kube.config import (
    ConfigFlags,
    ClientConfig,
    impersonation_headers,
    load_client_config,
    load_kubeconfig,
    parse_duration,
)

# --------------------------------------------------------------------------- helpers


def write_kubeconfig(path: Path, *, clusters=None, users=None, contexts=None, current=None,
                     preferences=None) -> Path:
    doc: dict = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in (clusters or {}).items()],
        "users": [{"name": n, "user": u} for n, u in (users or {}).items()],
        "contexts": [{"name": n, "context": c} for n, c in (contexts or {}).items()],
    }
    if current is not None:
        doc["current-context"] = current
    if preferences is not None:
        doc["preferences"] = preferences
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def simple_kubeconfig(path: Path, name: str, server: str, *, namespace=None, token=None,
                      current=True) -> Path:
    ctx = {"cluster": name, "user": name}
    if namespace:
        ctx["namespace"] = namespace
    return write_kubeconfig(
        path,
        clusters={name: {"server": server}},
        users={name: {"token": token or f"token-{name}"}},
        contexts={name: ctx},
        current=name if current else None,
    )


@pytest.fixture
def env(tmp_path):
    """A clean environment: HOME without a kubeconfig, nothing else."""
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home)}


def load(flags=ConfigFlags(), environ=None, **kw) -> ClientConfig:
    kw.setdefault("service_account_dir", Path("/nonexistent/serviceaccount"))
    return load_client_config(flags, environ if environ is not None else {}, **kw)


def bearer(cc: ClientConfig) -> str | None:
    return cc.configuration.get_api_key_with_prefix("BearerToken")


def kubeconfig_env(env, *paths) -> dict:
    return {**env, "KUBECONFIG": os.pathsep.join(str(p) for p in paths)}


# --------------------------------------------------------------------------- merging


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_first_kubeconfig_file_wins_current_context(tmp_path, env, order):
    a = simple_kubeconfig(tmp_path / "a.yaml", "ctx-a", "https://a.example:6443")
    b = simple_kubeconfig(tmp_path / "b.yaml", "ctx-b", "https://b.example:6443")
    files = (a, b) if order == "ab" else (b, a)
    cc = load(environ=kubeconfig_env(env, *files))
    first = "a" if order == "ab" else "b"
    assert cc.context == f"ctx-{first}"
    assert cc.configuration.host == f"https://{first}.example:6443"
    assert cc.source == f"kubeconfig {os.pathsep.join(map(str, files))}, context ctx-{first}"


def test_current_context_comes_from_first_file_that_sets_it(tmp_path, env):
    a = write_kubeconfig(tmp_path / "a.yaml", clusters={"c": {"server": "https://c:1"}})
    b = simple_kubeconfig(tmp_path / "b.yaml", "ctx-b", "https://b:1")
    c = simple_kubeconfig(tmp_path / "c.yaml", "ctx-c", "https://c:2")
    assert load(environ=kubeconfig_env(env, a, b, c)).context == "ctx-b"


def test_cluster_defined_in_two_files_first_definition_wins_as_a_whole(tmp_path, env):
    a = write_kubeconfig(tmp_path / "a.yaml",
                         clusters={"shared": {"server": "https://first.example"}},
                         contexts={"dev": {"cluster": "shared"}}, current="dev")
    b = write_kubeconfig(tmp_path / "b.yaml",
                         clusters={"shared": {"server": "https://second.example",
                                              "tls-server-name": "second-name",
                                              "insecure-skip-tls-verify": True}})
    cfg = load(environ=kubeconfig_env(env, a, b)).configuration
    assert cfg.host == "https://first.example"
    # no field-by-field merge: the second definition's extra fields are not picked up
    assert cfg.tls_server_name is None
    assert cfg.verify_ssl is True


def test_context_defined_in_two_files_first_namespace_wins(tmp_path, env):
    a = write_kubeconfig(tmp_path / "a.yaml", clusters={"c": {"server": "https://c"}},
                         contexts={"dev": {"cluster": "c", "namespace": "team-a"}})
    b = write_kubeconfig(tmp_path / "b.yaml",
                         contexts={"dev": {"cluster": "c", "namespace": "team-b"}}, current="dev")
    cc = load(environ=kubeconfig_env(env, a, b))
    assert (cc.context, cc.namespace) == ("dev", "team-a")
    cc = load(environ=kubeconfig_env(env, b, a))
    assert cc.namespace == "team-b"


def test_objects_from_later_files_are_usable(tmp_path, env):
    a = simple_kubeconfig(tmp_path / "a.yaml", "ctx-a", "https://a")
    b = simple_kubeconfig(tmp_path / "b.yaml", "ctx-b", "https://b", token="tb")
    cc = load(ConfigFlags(context="ctx-b"), kubeconfig_env(env, a, b))
    assert cc.configuration.host == "https://b"
    assert bearer(cc) == "Bearer tb"


def test_preferences_merge_first_file_wins(tmp_path, env):
    a = write_kubeconfig(tmp_path / "a.yaml", preferences={"colors": True})
    b = write_kubeconfig(tmp_path / "b.yaml", preferences={"colors": False, "extra": "b"})
    kc = load_kubeconfig(ConfigFlags(), kubeconfig_env(env, a, b))
    assert kc.preferences == {"colors": True, "extra": "b"}


def test_kubeconfig_flag_disables_merging(tmp_path, env):
    a = simple_kubeconfig(tmp_path / "a.yaml", "ctx-a", "https://a")
    b = simple_kubeconfig(tmp_path / "b.yaml", "only-b", "https://b")
    environ = kubeconfig_env(env, a, b)
    with pytest.raises(ConfigError, match='context "only-b" not found in kubeconfig'):
        load(ConfigFlags(kubeconfig=str(a), context="only-b"), environ)
    # --kubeconfig b: its own current-context, not the first KUBECONFIG file's
    cc = load(ConfigFlags(kubeconfig=str(b)), environ)
    assert cc.context == "only-b"
    assert load_kubeconfig(ConfigFlags(kubeconfig=str(b)), environ).files == (str(b),)


def test_missing_and_empty_kubeconfig_entries_are_skipped(tmp_path, env):
    a = simple_kubeconfig(tmp_path / "a.yaml", "ctx-a", "https://a")
    missing = tmp_path / "missing.yaml"
    environ = {**env, "KUBECONFIG": os.pathsep.join(["", str(missing), "", str(a)])}
    kc = load_kubeconfig(ConfigFlags(), environ)
    assert kc.files == (str(a),)
    assert kc.missing == (str(missing),)
    assert load(environ=environ).context == "ctx-a"


def test_kubeconfig_env_replaces_home_file(tmp_path, env):
    simple_kubeconfig(Path(env["HOME"]) / ".kube" / "config", "home-ctx", "https://home")
    a = simple_kubeconfig(tmp_path / "a.yaml", "ctx-a", "https://a")
    assert load(environ=env).context == "home-ctx"
    assert load(environ=kubeconfig_env(env, a)).context == "ctx-a"
    # KUBECONFIG naming only missing files does not fall back to ~/.kube/config
    with pytest.raises(ConfigError, match="none of the KUBECONFIG files exist"):
        load(environ=kubeconfig_env(env, tmp_path / "nope.yaml"))


def test_home_argument_locates_default_kubeconfig(tmp_path):
    other_home = tmp_path / "other"
    simple_kubeconfig(other_home / ".kube" / "config", "other-ctx", "https://o")
    cc = load(environ={"HOME": str(tmp_path / "empty")}, home=other_home)
    assert cc.context == "other-ctx"
    assert cc.source == f"kubeconfig {other_home / '.kube' / 'config'}, context other-ctx"


# --------------------------------------------------------------------------- selection and overrides


@pytest.fixture
def multi(tmp_path, env):
    """One file with two clusters, two users and three contexts."""
    path = write_kubeconfig(
        tmp_path / "kc.yaml",
        clusters={"prod": {"server": "https://prod.example:6443", "tls-server-name": "prod-name"},
                  "dev": {"server": "https://dev.example:6443"},
                  "noserver": {"insecure-skip-tls-verify": True}},
        users={"admin": {"token": "admin-token"}, "viewer": {"token": "viewer-token"}},
        contexts={"prod-admin": {"cluster": "prod", "user": "admin", "namespace": "prod-ns"},
                  "dev-viewer": {"cluster": "dev", "user": "viewer"},
                  "broken": {"cluster": "noserver", "user": "admin"},
                  "ghost-user": {"cluster": "dev", "user": "nobody"}},
        current="prod-admin",
    )
    return kubeconfig_env(env, path)


def test_current_context_selected_by_default(multi):
    cc = load(environ=multi)
    assert cc.context == "prod-admin"
    assert cc.configuration.host == "https://prod.example:6443"
    assert cc.configuration.tls_server_name == "prod-name"
    assert bearer(cc) == "Bearer admin-token"


def test_context_flag(multi):
    cc = load(ConfigFlags(context="dev-viewer"), multi)
    assert (cc.context, cc.configuration.host, bearer(cc)) == (
        "dev-viewer", "https://dev.example:6443", "Bearer viewer-token")


def test_unknown_context_is_an_error(multi):
    with pytest.raises(ConfigError, match='context "nope" not found in kubeconfig') as err:
        load(ConfigFlags(context="nope"), multi)
    assert "prod-admin" in str(err.value)  # the message lists what exists


def test_cluster_and_user_flags_override_the_context(multi):
    cc = load(ConfigFlags(cluster="dev", user="viewer"), multi)
    assert cc.context == "prod-admin"
    assert cc.configuration.host == "https://dev.example:6443"
    assert bearer(cc) == "Bearer viewer-token"
    assert cc.namespace == "prod-ns"  # the context still provides the namespace


def test_unknown_cluster_or_user_flag_is_an_error(multi):
    with pytest.raises(ConfigError, match='cluster "nope" not found'):
        load(ConfigFlags(cluster="nope"), multi)
    with pytest.raises(ConfigError, match='user "nope" not found'):
        load(ConfigFlags(user="nope"), multi)


def test_context_naming_an_undefined_user_connects_without_credentials(multi):
    cc = load(ConfigFlags(context="ghost-user"), multi)
    assert bearer(cc) is None


def test_server_flag_overrides_server_and_drops_tls_server_name(multi):
    cc = load(ConfigFlags(server="https://override.example:443/"), multi)
    assert cc.configuration.host == "https://override.example:443"
    assert cc.configuration.tls_server_name is None
    assert bearer(cc) == "Bearer admin-token"
    cc = load(ConfigFlags(server="https://o.example", tls_server_name="sni.example"), multi)
    assert cc.configuration.tls_server_name == "sni.example"


def test_token_flag_overrides_user_credentials(multi):
    assert bearer(load(ConfigFlags(token="flag-token"), multi)) == "Bearer flag-token"


def test_context_without_server_is_an_error(multi):
    with pytest.raises(ConfigError, match='cluster "noserver" has no server'):
        load(ConfigFlags(context="broken"), multi)
    cc = load(ConfigFlags(context="broken", server="https://fixed.example"), multi)
    assert cc.configuration.host == "https://fixed.example"


def test_insecure_flag_replaces_certificate_authority(tmp_path, env):
    ca_data = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nnot-a-real-ca\n").decode()
    path = write_kubeconfig(
        tmp_path / "kc.yaml",
        clusters={"c": {"server": "https://c.example", "certificate-authority-data": ca_data}},
        contexts={"x": {"cluster": "c"}}, current="x")
    environ = kubeconfig_env(env, path)
    cfg = load(environ=environ).configuration
    assert cfg.verify_ssl is True and cfg.ssl_ca_cert and os.path.isfile(cfg.ssl_ca_cert)
    cfg = load(ConfigFlags(insecure_skip_tls_verify=True), environ).configuration
    assert cfg.verify_ssl is False
    assert cfg.ssl_ca_cert is None
    ca = tmp_path / "flag-ca.crt"
    ca.write_text("x")
    cfg = load(ConfigFlags(certificate_authority=str(ca)), environ).configuration
    assert cfg.ssl_ca_cert == str(ca)


def test_certificate_flags_override_user_certificates(tmp_path, env):
    path = write_kubeconfig(
        tmp_path / "kc.yaml",
        clusters={"c": {"server": "https://c.example"}},
        users={"u": {"client-certificate-data": base64.b64encode(b"cert").decode(),
                     "client-key-data": base64.b64encode(b"key").decode()}},
        contexts={"x": {"cluster": "c", "user": "u"}}, current="x")
    for name in ("cert.pem", "key.pem"):
        (tmp_path / name).write_text(name)
    cfg = load(ConfigFlags(client_certificate=str(tmp_path / "cert.pem"),
                           client_key=str(tmp_path / "key.pem")),
               kubeconfig_env(env, path)).configuration
    assert (cfg.cert_file, cfg.key_file) == (str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))


def test_relative_paths_resolve_against_the_kubeconfig_directory(tmp_path, env, monkeypatch):
    kcdir = tmp_path / "conf"
    (kcdir / "certs").mkdir(parents=True)
    for name in ("ca.crt", "client.crt", "client.key"):
        (kcdir / "certs" / name).write_text(name)
    (kcdir / "token.txt").write_text("file-token\n")
    path = write_kubeconfig(
        kcdir / "config",
        clusters={"c": {"server": "https://c.example", "certificate-authority": "certs/ca.crt"}},
        users={"cert": {"client-certificate": "certs/client.crt", "client-key": "./certs/client.key"},
               "tok": {"tokenFile": "token.txt"}},
        contexts={"cert": {"cluster": "c", "user": "cert"}, "tok": {"cluster": "c", "user": "tok"}},
        current="cert")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    # a relative KUBECONFIG entry is relative to the working directory
    environ = {**env, "KUBECONFIG": os.path.relpath(path, elsewhere)}
    cfg = load(environ=environ).configuration
    assert cfg.ssl_ca_cert == str(kcdir / "certs" / "ca.crt")
    assert cfg.cert_file == str(kcdir / "certs" / "client.crt")
    assert cfg.key_file == str(kcdir / "certs" / "client.key")
    cc = load(ConfigFlags(context="tok"), environ)
    assert bearer(cc) == "Bearer file-token"  # read relative to the file, newline trimmed


def test_plain_http_server_gets_no_credentials(tmp_path, env):
    path = simple_kubeconfig(tmp_path / "kc.yaml", "local", "http://127.0.0.1:8080", token="secret")
    cc = load(environ=kubeconfig_env(env, path))
    assert cc.configuration.host == "http://127.0.0.1:8080"
    assert bearer(cc) is None


# --------------------------------------------------------------------------- namespace


@pytest.mark.parametrize("flag_ns, ctx_ns, expected", [
    ("from-flag", "from-context", "from-flag"),
    (None, "from-context", "from-context"),
    (None, None, "default"),
])
def test_namespace_precedence(tmp_path, env, flag_ns, ctx_ns, expected):
    path = simple_kubeconfig(tmp_path / "kc.yaml", "x", "https://x", namespace=ctx_ns)
    cc = load(ConfigFlags(namespace=flag_ns), kubeconfig_env(env, path))
    assert cc.namespace == expected


# --------------------------------------------------------------------------- exec plugins, no writes


def write_exec_plugin(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


TOKEN_PLUGIN = """\
import json, os, sys
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
assert info["kind"] == "ExecCredential", info
json.dump({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
           "status": {"token": "exec-token-" + sys.argv[1]}}, sys.stdout)
"""


def exec_kubeconfig(kcdir: Path, command: str, args=("42",)) -> Path:
    ca_data = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nnot-a-real-ca\n").decode()
    return write_kubeconfig(
        kcdir / "config",
        clusters={"c": {"server": "https://c.example:6443", "certificate-authority-data": ca_data}},
        users={"sso": {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                "command": command, "args": list(args),
                                "interactiveMode": "Never"}}},
        contexts={"sso": {"cluster": "c", "user": "sso"}}, current="sso")


def test_exec_plugin_token(tmp_path, env, monkeypatch):
    kcdir = tmp_path / "conf"
    write_exec_plugin(kcdir / "bin" / "cred-plugin", TOKEN_PLUGIN)
    path = exec_kubeconfig(kcdir, "./bin/cred-plugin")  # relative with a slash: kubeconfig dir
    monkeypatch.chdir(tmp_path)
    cc = load(environ=kubeconfig_env(env, path))
    assert bearer(cc) == "Bearer exec-token-42"
    assert cc.configuration.auth_settings()["BearerToken"]["value"] == "Bearer exec-token-42"


def test_token_flag_wins_over_exec_plugin(tmp_path, env):
    kcdir = tmp_path / "conf"
    path = exec_kubeconfig(kcdir, str(kcdir / "no-such-plugin"))
    assert bearer(load(ConfigFlags(token="t"), kubeconfig_env(env, path))) == "Bearer t"


def test_failing_exec_plugin_is_a_config_error_and_prints_nothing(tmp_path, env, capfd):
    kcdir = tmp_path / "conf"
    write_exec_plugin(kcdir / "bin" / "bad-plugin",
                      "import sys\nsys.stderr.write('login expired, run sso-login')\nsys.exit(3)\n")
    path = exec_kubeconfig(kcdir, str(kcdir / "bin" / "bad-plugin"))
    with pytest.raises(ConfigError, match="login expired") as err:
        load(environ=kubeconfig_env(env, path))
    assert 'user "sso"' in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="getting credentials"):
        load(environ=kubeconfig_env(env, exec_kubeconfig(kcdir, "/nonexistent/plugin")))
    assert capfd.readouterr() == ("", "")


def test_failing_exec_plugin_prints_nothing_outside_pytest(tmp_path, env):
    """Outside pytest the root logger has no handlers, so the client's ``logging.error`` would
    run ``basicConfig`` and print to stderr; the loader must prevent that."""
    import subprocess

    kcdir = tmp_path / "conf"
    write_exec_plugin(kcdir / "bin" / "bad-plugin", "import sys\nsys.exit(7)\n")
    path = exec_kubeconfig(kcdir, str(kcdir / "bin" / "bad-plugin"))
    script = (
        "import logging, sys\n"
        "from kubectl_dra.errors import ConfigError\n"
        "from kubectl_dra.kube.config import ConfigFlags, load_client_config\n"
        "try:\n"
        f"    load_client_config(ConfigFlags(kubeconfig={str(path)!r}), {{}})\n"
        "except ConfigError as exc:\n"
        "    assert 'returned 7' in str(exc), exc\n"
        "else:\n"
        "    sys.exit('no ConfigError')\n"
        "assert not logging.getLogger().handlers, logging.getLogger().handlers\n"
        "assert not logging.getLogger().filters\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True,
                            text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(root)})
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_kubeconfig_files_are_never_written(tmp_path, env, monkeypatch):
    kcdir = tmp_path / "conf"
    write_exec_plugin(kcdir / "bin" / "cred-plugin", TOKEN_PLUGIN)
    path = exec_kubeconfig(kcdir, "./bin/cred-plugin")
    second = simple_kubeconfig(tmp_path / "second" / "config", "other", "https://o")
    listing = sorted(os.listdir(kcdir))
    # an old mtime, so a rewrite within the same clock tick would still show
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    os.utime(second, ns=(1_000_000_000, 1_000_000_000))
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (path, second)}
    monkeypatch.chdir(tmp_path)
    cc = load(environ=kubeconfig_env(env, path, second))
    assert bearer(cc) == "Bearer exec-token-42"
    cc.new_api_client().close()
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (path, second)} == before
    assert sorted(os.listdir(kcdir)) == listing


# --------------------------------------------------------------------------- in-cluster and no config


@pytest.fixture
def service_account(tmp_path):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token")
    (sa / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nx\n")
    (sa / "namespace").write_text("agent-ns\n")
    return sa


IN_CLUSTER_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def test_in_cluster_without_kubeconfig(env, service_account):
    cc = load(environ={**env, **IN_CLUSTER_ENV}, service_account_dir=service_account)
    assert cc.source == "in-cluster"
    assert cc.context is None
    assert cc.configuration.host == "https://10.96.0.1:443"
    assert cc.configuration.ssl_ca_cert == str(service_account / "ca.crt")
    assert bearer(cc).lower() == "bearer sa-token"
    assert cc.namespace == "agent-ns"
    cc = load(ConfigFlags(namespace="mine"), {**env, **IN_CLUSTER_ENV},
              service_account_dir=service_account)
    assert cc.namespace == "mine"


def test_in_cluster_token_override(env, service_account):
    cc = load(ConfigFlags(token="flag-token"), {**env, **IN_CLUSTER_ENV},
              service_account_dir=service_account)
    assert bearer(cc) == "Bearer flag-token"  # and the SA refresh hook does not undo it


def test_kubeconfig_wins_over_in_cluster(tmp_path, env, service_account):
    path = simple_kubeconfig(tmp_path / "kc.yaml", "x", "https://kc.example", namespace="kc-ns")
    environ = {**kubeconfig_env(env, path), **IN_CLUSTER_ENV}
    cc = load(environ=environ, service_account_dir=service_account)
    assert (cc.source, cc.configuration.host, cc.namespace) == (
        f"kubeconfig {path}, context x", "https://kc.example", "kc-ns")


def test_context_without_namespace_uses_in_cluster_namespace_when_in_a_pod(tmp_path, env,
                                                                              service_account):
    path = simple_kubeconfig(tmp_path / "kc.yaml", "x", "https://kc.example")
    cc = load(environ={**kubeconfig_env(env, path), **IN_CLUSTER_ENV},
              service_account_dir=service_account)
    assert cc.namespace == "agent-ns"
    assert load(environ=kubeconfig_env(env, path), service_account_dir=service_account
                ).namespace == "default"


def test_no_configuration_at_all(env, service_account):
    with pytest.raises(ConfigError, match=r"no configuration: .*set KUBECONFIG, use --kubeconfig"):
        load(environ=env, service_account_dir=service_account)
    # KUBERNETES_SERVICE_HOST without a mounted token: explain, don't crash
    with pytest.raises(ConfigError, match="service-account token"):
        load(environ={**env, **IN_CLUSTER_ENV}, service_account_dir=Path("/nonexistent"))


def test_server_flag_alone_without_kubeconfig(env):
    cc = load(ConfigFlags(server="https://api.example:6443", token="t"), env)
    assert (cc.context, cc.configuration.host, bearer(cc), cc.namespace) == (
        None, "https://api.example:6443", "Bearer t", "default")
    assert cc.source == "--server https://api.example:6443"


def test_kubeconfig_without_current_context_suggests_contexts(tmp_path, env):
    path = simple_kubeconfig(tmp_path / "kc.yaml", "only", "https://x", current=False)
    with pytest.raises(ConfigError, match=r"no current-context.*--context \(one of: only\)"):
        load(environ=kubeconfig_env(env, path))


# --------------------------------------------------------------------------- bad files


def test_missing_kubeconfig_flag_file(tmp_path, env):
    missing = tmp_path / "does-not-exist.yaml"
    with pytest.raises(ConfigError, match=f'kubeconfig file "{missing}".*does not exist'):
        load(ConfigFlags(kubeconfig=str(missing)), env)


def test_malformed_yaml_names_file_and_line(tmp_path, env):
    bad = tmp_path / "bad.yaml"
    # line 6 is indented by one space: a block-structure error in the middle of the file
    bad.write_text("apiVersion: v1\nkind: Config\ncurrent-context: a\ncontexts:\n- name: a\n"
                   " context: {}\nusers: []\n")
    good = simple_kubeconfig(tmp_path / "good.yaml", "x", "https://x")
    for environ, flags in ((env, ConfigFlags(kubeconfig=str(bad))),
                           (kubeconfig_env(env, good, bad), ConfigFlags())):
        with pytest.raises(ConfigError) as err:
            load(flags, environ)
        message = str(err.value)
        assert str(bad) in message and "line 6" in message and "\n" not in message


def test_duplicate_names_in_one_file_are_an_error(tmp_path, env):
    path = tmp_path / "dup.yaml"
    path.write_text(yaml.safe_dump({"clusters": [{"name": "a", "cluster": {"server": "https://1"}},
                                                 {"name": "a", "cluster": {"server": "https://2"}}]}))
    with pytest.raises(ConfigError, match='duplicate name "a" in clusters'):
        load(ConfigFlags(kubeconfig=str(path)), env)


# --------------------------------------------------------------------------- --request-timeout


@pytest.mark.parametrize("text, seconds", [
    ("0", 0.0), ("0s", 0.0), ("-0", 0.0), ("30", 30.0), ("+5", 5.0), ("1s", 1.0),
    ("2m", 120.0), ("3h", 10800.0), ("1m30s", 90.0), ("500ms", 0.5), ("1.5s", 1.5),
    (".5s", 0.5), ("1h2m3s", 3723.0), ("250us", 0.00025), ("250\u00b5s", 0.00025),
    ("100ns", 1e-7), ("1m1m", 120.0),
])
def test_request_timeout_valid(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [
    "", "x", "s", "1S", "1H", "1 s", " 1s", "1s ", "-5", "-1s", "1.5", "1h1", "1d", "1e3s",
    ".s", "1..5s", "ms", "0x10", "1_000",
])
def test_request_timeout_invalid(text):
    with pytest.raises(ConfigError, match=f'invalid --request-timeout "{text}"'):
        parse_duration(text)


def test_request_timeout_reaches_client_config(tmp_path, env):
    path = simple_kubeconfig(tmp_path / "kc.yaml", "x", "https://x")
    environ = kubeconfig_env(env, path)
    assert load(ConfigFlags(request_timeout="1m30s"), environ).request_timeout == 90.0
    assert load(ConfigFlags(request_timeout="0"), environ).request_timeout == 0.0  # no timeout, as kubectl
    assert load(ConfigFlags(), environ).request_timeout is None  # unset: the default
    with pytest.raises(ConfigError, match="invalid --request-timeout"):
        load(ConfigFlags(request_timeout="soon"), environ)


# --------------------------------------------------------------------------- impersonation


def test_impersonation_from_flags_and_kubeconfig(tmp_path, env):
    path = write_kubeconfig(
        tmp_path / "kc.yaml", clusters={"c": {"server": "https://c"}},
        users={"u": {"token": "t", "as": "kc-user", "as-groups": ["kc-group"],
                     "as-user-extra": {"reason": ["debug"]}}},
        contexts={"x": {"cluster": "c", "user": "u"}}, current="x")
    environ = kubeconfig_env(env, path)
    assert load(environ=environ).impersonate_headers == {
        "Impersonate-User": "kc-user", "Impersonate-Group": "kc-group",
        "Impersonate-Extra-reason": "debug"}
    headers = load(ConfigFlags(as_user="jane", as_groups=("g1", "g2"), as_uid="42"),
                   environ).impersonate_headers
    assert headers["Impersonate-User"] == "jane"
    assert headers["Impersonate-Uid"] == "42"
    groups = sorted(v for k, v in headers.items() if k.lower() == "impersonate-group")
    assert groups == ["g1", "g2"]  # the flag replaces the kubeconfig's groups
    assert len({k for k in headers if k.lower() == "impersonate-group"}) == 2


def test_group_without_user_is_an_error(env):
    with pytest.raises(ConfigError, match="add --as"):
        load(ConfigFlags(server="https://x", as_groups=("g",)), env)
    assert load(ConfigFlags(server="https://x"), env).impersonate_headers == {}


class _Recorder(BaseHTTPRequestHandler):
    requests: list = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        type(self).requests.append((self.command, self.path, self.headers))
        body = json.dumps({"kind": "Status", "apiVersion": "v1"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def recorder():
    _Recorder.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.requests
    finally:
        server.shutdown()
        server.server_close()


def test_impersonation_headers_reach_the_server_repeated(tmp_path, env, recorder):
    from kubernetes import client

    url, seen = recorder
    path = simple_kubeconfig(tmp_path / "kc.yaml", "x", url, token="must-not-leak")
    cc = load(ConfigFlags(as_user="jane", as_groups=("g1", "g2", "system:authenticated"),
                          as_uid="u-1"), kubeconfig_env(env, path))
    api_client = cc.new_api_client()
    try:
        # generated API methods, GET and POST (bodies go through another urllib3 path);
        # small API groups keep the import cheap, and raw responses skip model parsing
        client.VersionApi(api_client).get_code(_request_timeout=5, _preload_content=False)
        client.AuthenticationV1Api(api_client).create_self_subject_review(
            client.V1SelfSubjectReview(), _request_timeout=5, _preload_content=False)
        # the raw path kubectl_dra.kube.client.Session uses: per-call header_params
        plain = client.ApiClient(cc.configuration)
        method, full_url, headers, _, _ = plain.param_serialize(
            method="GET", resource_path="/api/v1/namespaces/default/pods",
            header_params={"Accept": "application/json", **cc.impersonate_headers},
            auth_settings=["BearerToken"])
        plain.call_api(method, full_url, header_params=headers, _request_timeout=5).read()
        plain.close()
    finally:
        api_client.close()
    assert [m for m, _, _ in seen] == ["GET", "POST", "GET"]
    for _, _, headers in seen:
        assert headers.get_all("Impersonate-User") == ["jane"]
        assert headers.get_all("Impersonate-Uid") == ["u-1"]
        assert headers.get_all("Impersonate-Group") == ["g1", "g2", "system:authenticated"]
        assert headers.get("Authorization") is None  # plain http: no credentials, like kubectl


def test_many_groups_get_distinct_header_names():
    groups = tuple(f"g{i}" for i in range(200))
    headers = impersonation_headers("u", groups)
    names = [k for k in headers if k.lower() == "impersonate-group"]
    assert len(names) == 200 and len(set(names)) == 200
    assert sorted(headers[k] for k in names) == sorted(groups)
