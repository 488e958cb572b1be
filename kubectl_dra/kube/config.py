"""Kubeconfig and in-cluster configuration, resolved the way kubectl resolves them.

The official client's loader differs from kubectl in ways users would notice (docs/kubernetes/ecosystem.md §1.5):
the *last* KUBECONFIG file wins ``current-context``, ``KUBECONFIG`` is read at import time, the
kubeconfig is rewritten after token refreshes, there are no ``--cluster``/``--user`` overrides,
``load_config()`` prints, and exec-plugin failures are only logged. So this module does the
kubectl part itself (client-go ``clientcmd``):

1. pick the files: ``--kubeconfig`` alone; else every existing file in ``KUBECONFIG``; else
   ``~/.kube/config``;
2. read each one, resolve its relative paths against its own directory, and merge them so that
   the first file to set a value or map key wins (``current-context``, preferences, and each named
   cluster, user and context as a whole);
3. choose context, cluster and user, and apply the flag overrides;

and then hands a single-context dict to the client's ``KubeConfigLoader``, which turns tokens,
certificates, exec plugins and auth providers into a ``Configuration``. Nothing is ever written
back to a kubeconfig file, and nothing is printed.

Impersonation (``--as``, ``--as-group``, ``--as-uid`` and the kubeconfig user's ``as*`` fields)
is not part of ``Configuration``. :attr:`ClientConfig.impersonate_headers` is a plain dict to
merge into the headers of every request, e.g.::

    api_client = kubernetes.client.ApiClient(cc.configuration)
    api_client.default_headers.update(cc.impersonate_headers)   # or cc.new_api_client()

``Impersonate-Group`` must be sent once per group, and a dict cannot repeat a key, so the second
and later groups use the same header name in a different letter case (``impersonate-Group``,
``iMpersonate-Group``, ...). HTTP header names are case-insensitive: the client's request path
(dict -> urllib3 -> http.client) sends every key as its own header line, and the API server reads
them as one repeated header. Never normalise the keys' case when copying the dict.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import re
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import yaml

from kubectl_dra.decoding import TooDeep, yaml_document
from kubectl_dra.duration import parse_ns
from kubectl_dra.errors import ConfigError
from kubectl_dra.kube.client import DEFAULT_BUDGET
from kubectl_dra.files import FileReadError, check_file, read_bytes, read_text
from kubectl_dra.kube.options import ConfigFlags

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where a pod's service-account token, CA and namespace are mounted (tests pass another dir)."""

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"

_EFFECTIVE = "kubectl-dra"  # name of the one cluster/user/context handed to the client's loader


@dataclass(frozen=True)
class ClientConfig:
    """Everything needed to talk to one API server as kubectl would."""

    configuration: Any  # kubernetes.client.Configuration, ready for ApiClient(configuration)
    namespace: str  # -n, else the context's namespace, else the in-cluster namespace, else "default"
    context: str | None  # context used; None for in-cluster or --server without a context
    source: str  # e.g. "kubeconfig /root/.kube/config, context kind-dra" or "in-cluster"
    request_timeout: float | None  # seconds; 0 = no timeout (kubectl's "0"); None = unset: 10 s connect, 60 s read
    impersonate_headers: dict[str, str]  # merge into every request's headers; keep key case as is
    credential: str = "no credentials"  # what a 401 refused, e.g. 'user "admin" of context "kind" (bearer token)'

    def new_api_client(self):
        """A fresh ``kubernetes.client.ApiClient`` that also sends the impersonation headers."""
        # start-up: offline
        from kubernetes.client import ApiClient

        api_client = ApiClient(self.configuration)
        api_client.default_headers.update(self.impersonate_headers)
        return api_client


@dataclass(frozen=True)
class Kubeconfig:
    """The merged kubeconfig, before any context is chosen."""

    files: tuple[str, ...]  # files read, highest precedence first
    missing: tuple[str, ...]  # candidate files that do not exist (skipped, like kubectl)
    origin: str  # "--kubeconfig", "KUBECONFIG" or "default" (~/.kube/config)
    current_context: str | None
    contexts: Mapping[str, dict]
    clusters: Mapping[str, dict]
    users: Mapping[str, dict]
    preferences: Mapping[str, Any]
    extensions: Mapping[str, Any]

    def describe(self) -> str:
        return os.pathsep.join(self.files) if self.files else "(no kubeconfig file)"


# --------------------------------------------------------------------------- --request-timeout

_INT = re.compile(r"[+-]?[0-9]+")
_TIMEOUT_HINT = "use whole seconds or a number with a unit, e.g. 0 (no timeout), 30, 1s, 2m, 1m30s, 500ms"


def parse_duration(text: str) -> float:
    """Seconds for a kubectl ``--request-timeout`` value; 0.0 means no timeout, as in kubectl.

    kubectl (client-go ``ParseTimeout``) accepts a non-negative integer, meaning seconds, or a Go
    duration: one or more ``<number><unit>`` with units ns, us (µs), ms, s, m, h, e.g. ``1m30s``.
    """
    if not isinstance(text, str):
        raise ConfigError(f'invalid --request-timeout "{text}": {_TIMEOUT_HINT}')
    if _INT.fullmatch(text):
        value = int(text)
        if value >= 0 and value <= 2**63 - 1:
            return float(value)
    try:
        nanoseconds = parse_ns(text)
    except ValueError as exc:
        raise ConfigError(f'invalid --request-timeout "{text}": ' + ("too long" if str(exc) == "too long"
                                                                     else _TIMEOUT_HINT)) from None
    if nanoseconds < 0:
        raise ConfigError(f'invalid --request-timeout "{text}": a timeout cannot be negative')
    return float(nanoseconds / 10**9)


# --------------------------------------------------------------------------- reading kubeconfig

def _candidate_files(flags: ConfigFlags, environ: Mapping[str, str],
                     home: Path | None) -> tuple[list[str], str]:
    if flags.kubeconfig:
        return [flags.kubeconfig], "--kubeconfig"
    env = environ.get("KUBECONFIG", "")
    if env:
        seen: list[str] = []
        for entry in env.split(os.pathsep):
            if entry and entry not in seen:
                seen.append(entry)
        return seen, "KUBECONFIG"
    if home is None:
        home = Path(environ["HOME"]) if environ.get("HOME") else Path.home()
    return [str(Path(home) / ".kube" / "config")], "default"


def _read_yaml(path: str) -> dict | None:
    """The parsed file, ``{}`` for an empty one, ``None`` if it does not exist."""
    try:
        raw = read_bytes(path)  # bounded; a FIFO or device named as kubeconfig is refused, never waited on
    except FileReadError as exc:
        if exc.missing:
            return None
        raise ConfigError(f"cannot read kubeconfig {path}: {exc.reason}") from None
    try:
        doc = yaml_document(raw, yaml.SafeLoader)
    except TooDeep as exc:
        raise ConfigError(f"cannot parse kubeconfig {path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise ConfigError(f"cannot parse kubeconfig {path}: {where}{problem}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"cannot parse kubeconfig {path}: expected a mapping at the top level, "
                          f"found {type(doc).__name__}")
    return doc


def _resolve(base: str, value: Any) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return os.path.normpath(os.path.join(base, value))
    return value


def _named(doc: dict, path: str, key: str, inner: str) -> dict[str, dict]:
    items = doc.get(key) or []
    if not isinstance(items, list):
        raise ConfigError(f"invalid kubeconfig {path}: {key} must be a list")
    out: dict[str, dict] = {}
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise ConfigError(f"invalid kubeconfig {path}: every entry in {key} needs a name")
        if name in out:
            raise ConfigError(f'invalid kubeconfig {path}: duplicate name "{name}" in {key}')
        value = item.get(inner) or {}
        if not isinstance(value, dict):
            raise ConfigError(f'invalid kubeconfig {path}: {key} entry "{name}" has no {inner} mapping')
        out[name] = copy.deepcopy(value)
    return out


# The typed fields of client-go's kubeconfig (api/v1 Cluster, AuthInfo, Context): a value of another
# type fails its decoding ("cannot unmarshal array into ... of type string"), so kubectl refuses the
# file; so do we, naming the entry and the field, rather than fail later on an unhashable name.
_STRINGS = {
    "clusters": ("server", "certificate-authority", "certificate-authority-data", "tls-server-name", "proxy-url"),
    "users": ("token", "tokenFile", "username", "password", "client-certificate", "client-certificate-data",
              "client-key", "client-key-data", "as", "as-uid"),
    "contexts": ("cluster", "user", "namespace"),
}
_BOOLS = {"clusters": ("insecure-skip-tls-verify", "disable-compression")}
_STRING_LISTS = {"users": ("as-groups",)}


def _check_types(entries: dict[str, dict], path: str, key: str) -> None:
    for name, entry in entries.items():
        for field, kind, wanted in [*((f, str, "a string") for f in _STRINGS.get(key, ())),
                                    *((f, bool, "true or false") for f in _BOOLS.get(key, ()))]:
            if entry.get(field) is not None and not isinstance(entry[field], kind):
                raise ConfigError(f'invalid kubeconfig {path}: {key} entry "{name}": {field} must be {wanted}')
        for field in _STRING_LISTS.get(key, ()):
            value = entry.get(field)
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ConfigError(f'invalid kubeconfig {path}: {key} entry "{name}": {field} must be a list of strings')


def _read_kubeconfig_file(path: str) -> dict | None:
    """One file, with relative paths made absolute against its directory (client-go
    ``ResolveLocalPaths``); ``None`` if it does not exist."""
    doc = _read_yaml(path)
    if doc is None:
        return None
    base = os.path.dirname(os.path.abspath(path))
    clusters = _named(doc, path, "clusters", "cluster")
    users = _named(doc, path, "users", "user")
    contexts = _named(doc, path, "contexts", "context")
    for key, entries in (("clusters", clusters), ("users", users), ("contexts", contexts)):
        _check_types(entries, path, key)
    for cluster in clusters.values():
        if "certificate-authority" in cluster:
            cluster["certificate-authority"] = _resolve(base, cluster["certificate-authority"])
    for user in users.values():
        for field in ("client-certificate", "client-key", "tokenFile"):
            if field in user:
                user[field] = _resolve(base, user[field])
        exec_cfg = user.get("exec")
        if isinstance(exec_cfg, dict):
            command = exec_cfg.get("command")
            # Only a command with a path separator is file-relative; a bare name is looked up on PATH.
            if isinstance(command, str) and os.sep in command:
                exec_cfg["command"] = _resolve(base, command)
    current = doc.get("current-context")
    if current is not None and not isinstance(current, str):
        raise ConfigError(f"invalid kubeconfig {path}: current-context must be a string")
    preferences = doc.get("preferences") or {}
    extensions: dict[str, Any] = {}
    for item in doc.get("extensions") or []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            extensions.setdefault(item["name"], item.get("extension"))
    return {"clusters": clusters, "users": users, "contexts": contexts,
            "current-context": current or None,
            "preferences": preferences if isinstance(preferences, dict) else {},
            "extensions": extensions}


def load_kubeconfig(flags: ConfigFlags, environ: Mapping[str, str] = os.environ,
                    home: Path | None = None) -> Kubeconfig:
    """Read and merge the kubeconfig files kubectl would read (first file wins)."""
    candidates, origin = _candidate_files(flags, environ, home)
    files: list[str] = []
    missing: list[str] = []
    current: str | None = None
    contexts: dict[str, dict] = {}
    clusters: dict[str, dict] = {}
    users: dict[str, dict] = {}
    preferences: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    for path in candidates:
        doc = _read_kubeconfig_file(path)
        if doc is None:
            if origin == "--kubeconfig":
                raise ConfigError(f'kubeconfig file "{path}" (from --kubeconfig) does not exist')
            missing.append(path)
            continue
        files.append(path)
        if current is None:
            current = doc["current-context"]
        for merged, key in ((contexts, "contexts"), (clusters, "clusters"), (users, "users"),
                            (extensions, "extensions")):
            for name, value in doc[key].items():
                merged.setdefault(name, value)
        for name, value in doc["preferences"].items():
            if name not in preferences or preferences[name] in (None, False, "", [], {}):
                preferences[name] = value
    return Kubeconfig(files=tuple(files), missing=tuple(missing), origin=origin,
                      current_context=current, contexts=contexts, clusters=clusters, users=users,
                      preferences=preferences, extensions=extensions)


# --------------------------------------------------------------------------- impersonation

_HEADER_KEY_SAFE = frozenset(b"!#$&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _header_key_escape(key: str) -> str:
    """client-go ``headerKeyEscape``: %-encode every byte that is not an HTTP token byte (and '%')."""
    return "".join(chr(b) if b in _HEADER_KEY_SAFE else f"%{b:02X}" for b in key.encode())


def _case_variant(name: str, index: int) -> str:
    """``name`` for index 0; for index n > 0 the same name with letters' case flipped by n's bits."""
    letters = [i for i, c in enumerate(name) if c.isalpha()]
    if index >= 2 ** len(letters):
        raise ConfigError(f"too many values for the {name} header")
    chars = list(name)
    for bit, pos in enumerate(letters):
        if index >> bit & 1:
            chars[pos] = chars[pos].swapcase()
    return "".join(chars)


def _header_value(value: Any, what: str) -> str:
    text = str(value)
    if "\r" in text or "\n" in text:
        raise ConfigError(f"{what} must not contain a line break")
    return text


def impersonation_headers(user: str | None, groups: tuple[str, ...] | list[str] = (),
                          uid: str | None = None,
                          extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Headers that make the API server act as ``user`` (kubectl ``--as`` and friends).

    Repeated headers (one ``Impersonate-Group`` per group, one ``Impersonate-Extra-<key>`` per
    value) are spelled in different letter cases, so a plain dict can carry them; see the module
    docstring.
    """
    if not user:
        if uid or groups or extra:
            raise ConfigError("impersonation: --as-group and --as-uid (or as-groups, as-uid, "
                              "as-user-extra in the kubeconfig user) need a user to impersonate; "
                              "add --as")
        return {}
    headers = {"Impersonate-User": _header_value(user, "--as")}
    if uid:
        headers["Impersonate-Uid"] = _header_value(uid, "--as-uid")
    for i, group in enumerate(groups):
        headers[_case_variant("Impersonate-Group", i)] = _header_value(group, "--as-group")
    for key in sorted(extra or {}):
        values = extra[key]
        if isinstance(values, str) or not isinstance(values, (list, tuple)):
            values = [values]
        name = "Impersonate-Extra-" + _header_key_escape(str(key))
        for i, value in enumerate(values):
            headers[_case_variant(name, i)] = _header_value(value, f"as-user-extra {key}")
    return headers


# --------------------------------------------------------------------------- overrides

def _override_cluster(cluster: dict, flags: ConfigFlags) -> None:
    """client-go ``getCluster`` with ``ConfigOverrides``."""
    if flags.server:
        cluster["server"] = flags.server
    if flags.insecure_skip_tls_verify or flags.certificate_authority:
        # A CA or --insecure-skip-tls-verify on the command line replaces both CA and insecure.
        cluster.pop("certificate-authority-data", None)
        cluster["insecure-skip-tls-verify"] = bool(flags.insecure_skip_tls_verify)
        if flags.certificate_authority:
            cluster["certificate-authority"] = os.path.abspath(flags.certificate_authority)
        else:
            cluster.pop("certificate-authority", None)
    if flags.tls_server_name or flags.server:
        # --server drops the kubeconfig's tls-server-name unless --tls-server-name is given too.
        if flags.tls_server_name:
            cluster["tls-server-name"] = flags.tls_server_name
        else:
            cluster.pop("tls-server-name", None)


def _override_user(user: dict, flags: ConfigFlags) -> None:
    if flags.token:
        # A token on the command line is the credential; kubectl then skips exec/auth providers.
        for key in ("tokenFile", "exec", "auth-provider", "username", "password"):
            user.pop(key, None)
        user["token"] = flags.token
    if flags.client_certificate:
        user.pop("client-certificate-data", None)
        user["client-certificate"] = os.path.abspath(flags.client_certificate)
    if flags.client_key:
        user.pop("client-key-data", None)
        user["client-key"] = os.path.abspath(flags.client_key)


def _budget(timeout: float | None) -> float | None:
    """The bound on getting credentials: --request-timeout (0: none), else the client's default."""
    return DEFAULT_BUDGET if timeout is None else (timeout or None)


def _within(load: Callable[[], None], seconds: float | None, user: dict, where: str) -> None:
    """Run the loader (which runs an exec credential plugin, if the user has one) within the
    request timeout: a plugin that hangs must not hold the command past it. The plugin's process
    is left to finish on its own (the loader keeps no handle to it)."""
    if seconds is None or not user.get("exec"):
        load()
        return
    failure: list[BaseException] = []

    def run() -> None:
        try:
            load()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="exec-credential", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise ConfigError(f'{where}: the exec credential plugin {user["exec"].get("command", "?")} did not answer '
                          f"within the request timeout ({seconds:g}s; --request-timeout sets it)")
    if failure:
        raise failure[0]


def _normalize_server(server: str) -> str:
    # client-go DefaultServerURL: a host without a scheme becomes http:// (TLS settings are not
    # consulted at that point in kubectl, so it is plain http there too).
    if "://" not in server:
        server = "http://" + server
    server = server.rstrip("/")
    try:  # a URL that cannot be parsed is named here, not as a TLS or connection failure later
        parts = urllib.parse.urlsplit(server)
        parts.port  # noqa: B018 - raises for a port that is no number or out of range
    except ValueError as exc:
        reason = str(exc).replace("Port out of range 0-65535", "the port is out of range 0-65535")
        raise ConfigError(f'invalid server URL "{server}": {reason[:1].lower()}{reason[1:]}') from None
    if not parts.hostname:
        raise ConfigError(f'invalid server URL "{server}": no host in it')
    return server


# --------------------------------------------------------------------------- building a Configuration

@contextlib.contextmanager
def _client_logged_errors() -> Iterator[list[str]]:
    """Collect (and silence) what the client's kubeconfig loader logs instead of raising.

    ``KubeConfigLoader`` reports exec-plugin failures with ``logging.error`` on the root logger,
    which would also run ``logging.basicConfig()`` and print to stderr. A root-logger filter takes
    those records; a temporary NullHandler keeps ``basicConfig`` from running.
    """
    errors: list[str] = []

    def take(record: logging.LogRecord) -> bool:
        if record.name == "root" and record.module == "kube_config":
            errors.append(record.getMessage())
            return False
        return True

    root = logging.getLogger()
    guard = logging.NullHandler()
    root.addFilter(take)
    root.addHandler(guard)
    try:
        yield errors
    finally:
        root.removeFilter(take)
        root.removeHandler(guard)


def _configuration_from_kubeconfig(cluster: dict, user: dict, user_name: str | None, where: str,
                                   timeout: float | None = None):
    # start-up: offline
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigLoader

    cluster = dict(cluster)
    cluster["server"] = _normalize_server(cluster["server"])
    secure = cluster["server"].lower().startswith("https://")
    if not secure:
        # kubectl reads user credentials only for TLS servers; never send a token in clear text.
        user = {}
    if secure and cluster.get("insecure-skip-tls-verify") and (
            cluster.get("certificate-authority") or cluster.get("certificate-authority-data")):
        raise ConfigError(f"{where}: specifying a root certificates file with the insecure flag "
                          "is not allowed (remove certificate-authority or insecure-skip-tls-verify)")
    user = dict(user)
    if user.get("tokenFile") and not user.get("token"):
        # client-go trims the token file; the Python loader would send a trailing newline.
        try:
            user["token"] = read_text(user["tokenFile"]).strip()
        except FileReadError as exc:
            raise ConfigError(f'{where}: cannot read tokenFile {user["tokenFile"]} of user '
                              f'"{user_name}": {exc.reason}') from None
        user.pop("tokenFile")
    if secure:  # the client opens these itself: a device or a huge file is refused here first
        for holder, field in ((cluster, "certificate-authority"), (user, "client-certificate"), (user, "client-key")):
            if holder.get(field) and not holder.get(f"{field}-data"):
                try:
                    check_file(holder[field])
                except FileReadError as exc:
                    raise ConfigError(f"{where}: cannot read {field} {holder[field]}: {exc.reason}") from None
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": _EFFECTIVE,
        "clusters": [{"name": _EFFECTIVE, "cluster": cluster}],
        "users": [{"name": _EFFECTIVE, "user": user}],
        "contexts": [{"name": _EFFECTIVE, "context": {"cluster": _EFFECTIVE, "user": _EFFECTIVE}}],
    }
    configuration = Configuration()
    try:
        with _client_logged_errors() as errors:
            loader = KubeConfigLoader(config_dict=doc, active_context=_EFFECTIVE)
            _within(lambda: loader.load_and_set(configuration), _budget(timeout), user, where)
    except ConfigException as exc:
        raise ConfigError(f"{where}: {_one_line(exc)}") from None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{where}: invalid credentials or certificates: {_one_line(exc)}") from None
    if errors:
        raise ConfigError(f'{where}: getting credentials for user "{user_name}" failed: '
                          f"{_one_line(errors[0])}")
    return configuration


def _credential(user: dict, user_name: str | None, context: str | None, flags) -> str:
    """Which credential requests carry, in the words a 401 message needs."""
    if flags.token:
        kind = "the --token given"
    elif user.get("token") or user.get("tokenFile"):
        kind = "bearer token" + (f" from {user['tokenFile']}" if user.get("tokenFile") else "")
    elif user.get("exec"):
        kind = f"token from the exec plugin {user['exec'].get('command', '?')}"
    elif user.get("auth-provider"):
        kind = f"auth-provider {user['auth-provider'].get('name', '?')}"
    elif user.get("client-certificate") or user.get("client-certificate-data") or flags.client_certificate:
        kind = "client certificate" + (f" {user['client-certificate']}" if user.get("client-certificate") else "")
    elif user.get("username"):
        kind = "basic auth"
    else:
        return f'no credentials (user "{user_name}" has none)' if user_name else "no credentials"
    who = f'user "{user_name}"' + (f' of context "{context}"' if context else "") if user_name else "the kubeconfig"
    return kind if flags.token else f"{who} ({kind})"


def _one_line(value: object) -> str:
    text = " ".join(str(value).split())
    return text or type(value).__name__


def _in_cluster_possible(environ: Mapping[str, str], sa_dir: Path) -> bool:
    return bool(environ.get(SERVICE_HOST_ENV) and environ.get(SERVICE_PORT_ENV)
                and (sa_dir / "token").is_file())


def _in_cluster_namespace(environ: Mapping[str, str], sa_dir: Path) -> str | None:
    if environ.get("POD_NAMESPACE"):
        return environ["POD_NAMESPACE"]
    try:
        return read_text(sa_dir / "namespace", explicit=False).strip() or None
    except FileReadError:
        return None


def _in_cluster(flags: ConfigFlags, environ: Mapping[str, str], sa_dir: Path,
                timeout: float | None, headers: dict[str, str]) -> ClientConfig:
    # start-up: offline
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    token_file = sa_dir / "token"
    if not environ.get(SERVICE_PORT_ENV):
        raise ConfigError(f"no configuration: {SERVICE_HOST_ENV} is set but {SERVICE_PORT_ENV} is "
                          "not; set KUBECONFIG or use --kubeconfig")
    if not token_file.is_file():
        raise ConfigError(f"no configuration: {SERVICE_HOST_ENV} is set but there is no "
                          f"service-account token at {token_file}; set KUBECONFIG, use "
                          "--kubeconfig, or mount a service account")
    configuration = Configuration()
    try:
        InClusterConfigLoader(token_filename=str(token_file), cert_filename=str(sa_dir / "ca.crt"),
                              environ=environ).load_and_set(configuration)
    except (ConfigException, OSError) as exc:
        raise ConfigError(f"in-cluster configuration ({sa_dir}): {_one_line(exc)}") from None
    # kubectl's in-cluster config takes only these three overrides.
    if flags.server:
        configuration.host = _normalize_server(flags.server)
    if flags.token:
        configuration.refresh_api_key_hook = None  # would re-read the service-account token
        configuration.api_key["BearerToken"] = f"Bearer {flags.token}"
    if flags.certificate_authority:
        configuration.ssl_ca_cert = os.path.abspath(flags.certificate_authority)
    namespace = flags.namespace or _in_cluster_namespace(environ, sa_dir) or "default"
    credential = "the --token given" if flags.token else f"the service account token {token_file}"
    return ClientConfig(configuration=configuration, namespace=namespace, context=None,
                        source="in-cluster", request_timeout=timeout, impersonate_headers=headers,
                        credential=credential)


def _no_configuration(kc: Kubeconfig) -> ConfigError:
    hint = "set KUBECONFIG, use --kubeconfig, or run in a cluster"
    if not kc.files:
        if kc.origin == "KUBECONFIG" and not kc.missing:  # kubectl skips empty entries, and so ~/.kube/config too
            return ConfigError(f"no configuration: KUBECONFIG is set but names no file (its entries are empty, "
                               f"and an empty entry is skipped, as kubectl skips it); {hint}")
        if kc.origin == "KUBECONFIG":
            return ConfigError(f"no configuration: none of the KUBECONFIG files exist "
                               f"({os.pathsep.join(kc.missing)}); {hint}")
        where = kc.missing[0] if kc.missing else "~/.kube/config"
        return ConfigError(f"no configuration: {where} does not exist; {hint}")
    if kc.contexts:
        names = ", ".join(sorted(kc.contexts))
        return ConfigError(f"no configuration: kubeconfig {kc.describe()} has no current-context; "
                           f"pass --context (one of: {names}) or run "
                           "'kubectl config use-context NAME'")
    return ConfigError(f"no configuration: kubeconfig {kc.describe()} defines no contexts; "
                       f"pass --server, or {hint}")


def load_client_config(flags: ConfigFlags, environ: Mapping[str, str] = os.environ,
                       home: Path | None = None, *,
                       service_account_dir: Path | None = None) -> ClientConfig:
    """Resolve kubectl's global flags, kubeconfig files and in-cluster environment into one
    connection. Raises :class:`ConfigError` with a one-line message when that is impossible."""
    sa_dir = Path(service_account_dir) if service_account_dir is not None else SERVICE_ACCOUNT_DIR
    timeout = parse_duration(flags.request_timeout) if flags.request_timeout is not None else None
    kc = load_kubeconfig(flags, environ, home)

    context_name = flags.context or kc.current_context
    context: dict = {}
    if context_name:
        if context_name not in kc.contexts:
            known = ", ".join(sorted(kc.contexts)) or "none"
            raise ConfigError(f'context "{context_name}" not found in kubeconfig '
                              f"({kc.describe()}; contexts: {known})")
        context = kc.contexts[context_name]
    cluster_name = flags.cluster or context.get("cluster") or None
    user_name = flags.user or context.get("user") or None

    cluster: dict = {}
    if cluster_name:
        if cluster_name in kc.clusters:
            cluster = copy.deepcopy(kc.clusters[cluster_name])
        elif flags.cluster:
            raise ConfigError(f'cluster "{cluster_name}" not found in kubeconfig ({kc.describe()})')
        else:
            raise ConfigError(f'context "{context_name}" uses cluster "{cluster_name}", which is '
                              f"not defined in kubeconfig ({kc.describe()})")
    user: dict = {}
    if user_name:
        if user_name in kc.users:
            user = copy.deepcopy(kc.users[user_name])
        elif flags.user:
            raise ConfigError(f'user "{user_name}" not found in kubeconfig ({kc.describe()})')
        # A context naming an undefined user connects without credentials, as kubectl does.

    _override_cluster(cluster, flags)
    _override_user(user, flags)
    headers = impersonation_headers(
        flags.as_user or user.get("as"),
        tuple(flags.as_groups) or tuple(user.get("as-groups") or ()),
        flags.as_uid or user.get("as-uid"),
        user.get("as-user-extra") or None,
    )

    if not cluster.get("server"):
        if not context_name and not cluster_name:
            # kubectl's "empty configuration": nothing selected and no --server.
            if environ.get(SERVICE_HOST_ENV):
                return _in_cluster(flags, environ, sa_dir, timeout, headers)
            raise _no_configuration(kc)
        if cluster_name:
            raise ConfigError(f'cluster "{cluster_name}" has no server in kubeconfig '
                              f"({kc.describe()}); set clusters[].cluster.server or pass --server")
        raise ConfigError(f'context "{context_name}" names no cluster; set contexts[].context.cluster '
                          "or pass --cluster or --server")

    parts = []
    if kc.files:
        parts.append(f"kubeconfig {kc.describe()}")
    if context_name:
        parts.append(f"context {context_name}")
    if flags.server:
        parts.append(f"--server {flags.server}")
    source = ", ".join(parts)
    configuration = _configuration_from_kubeconfig(cluster, user, user_name, source, timeout)
    namespace = (flags.namespace or context.get("namespace")
                 or (_in_cluster_namespace(environ, sa_dir)
                     if _in_cluster_possible(environ, sa_dir) else None)
                 or "default")
    return ClientConfig(configuration=configuration, namespace=str(namespace),
                        context=context_name or None, source=source, request_timeout=timeout,
                        impersonate_headers=headers,
                        credential=_credential(user, user_name, context_name, flags))
