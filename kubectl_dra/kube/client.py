"""One HTTP session with an API server, through the official client, returning raw JSON.

DRA and scheduling objects change shape between minor versions, so we fetch raw JSON and parse
it into our own tolerant views instead of the client's strict models. Every call carries a
timeout. GETs are retried here, not in the connection pool, so ``--request-timeout`` bounds a
request with all its retries and every Retry-After wait: 429 and 5xx up to four times (honouring
Retry-After while it fits), a refused connection twice; a TLS verification failure, a read
timeout and every write are never retried.
"""

from __future__ import annotations

import email.utils
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Sequence

from kubectl_dra.decoding import TooDeep, json_value
from kubectl_dra.errors import ApiError

DEFAULT_TIMEOUT = (10.0, 60.0)
DEFAULT_BUDGET = 120.0
"""Seconds a request may take with all its retries, waits and its answer's last byte when
--request-timeout is not given (0 means no bound, as in kubectl)."""
"""(connect, read) seconds when the user did not pass ``--request-timeout``."""

RETRY_STATUSES = (429, 500, 502, 503, 504)
STATUS_RETRIES = 4
CONNECT_RETRIES = 2
BACKOFF = 0.25  # seconds, doubled each retry


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds a Retry-After header asks for (a number or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def _is_tls(reason: object) -> bool:
    text = f"{type(reason).__name__} {reason}"
    return "SSL" in text or "CERTIFICATE" in text.upper()


def status_message(status: int, body: bytes, fallback: str) -> str:
    """The ``message`` of a Kubernetes Status body, or the HTTP reason."""
    try:
        doc = json_value(body)
        if isinstance(doc, dict) and doc.get("message"):
            return str(doc["message"])
    except ValueError:
        pass
    return fallback or f"HTTP {status}"


class NoAnswer(Exception):
    """A request that got no HTTP answer; ``reason`` is what the transport said."""

    def __init__(self, reason: object):
        super().__init__(str(reason))
        self.reason = reason


def json_lines(chunks: Iterator[bytes]) -> Iterator[Any]:
    """A watch body's events: one JSON document a line, whatever the chunking."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield json_value(line)


class Session:
    """GET JSON from one API server with the user's credentials, timeout and impersonation."""

    def __init__(self, configuration, *, request_timeout: float | None = None,
                 headers: Mapping[str, Any] | None = None, credential: str = "the configured credentials",
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        # start-up: offline
        from kubernetes.client import ApiClient
        from urllib3.util.retry import Retry

        configuration.retries = Retry(total=0, connect=0, read=0, status=0, redirect=0, raise_on_status=False)
        self.configuration = configuration
        self.api_client = ApiClient(configuration)
        # seconds for a request, its retries and its whole answer; None: no bound (--request-timeout 0)
        self.budget = DEFAULT_BUDGET if request_timeout is None else (request_timeout or None)
        # unset: the default per attempt; 0: no timeout at all (kubectl's --request-timeout=0)
        self.timeout = DEFAULT_TIMEOUT if request_timeout is None else (request_timeout or None)
        self.headers = dict(headers or {})
        self.server = configuration.host
        self.credential = credential
        self.clock, self.sleep = clock, sleep

    def close(self) -> None:
        self.api_client.close()

    def get(self, path: str, query: Sequence[tuple[str, str]] = ()) -> dict:
        """GET ``path`` and return the decoded JSON object; raise :class:`ApiError` otherwise."""
        return self.request("GET", path, query)

    def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = ()) -> bytes:
        """GET ``path`` and return the body undecoded (the caller parses it straight into models)."""
        return self.exchange("GET", path, query)

    def request(self, method: str, path: str, query: Sequence[tuple[str, str]] = (), body: Any = None,
                content_type: str = "application/json") -> dict:
        """One request (GETs with their retries, all within ``--request-timeout``), decoded."""
        data = self.exchange(method, path, query, body, content_type)
        try:
            doc = json_value(data)
        except TooDeep as exc:
            raise ApiError(f"{self.server}{path}: the server's answer is {exc}") from None
        except ValueError:
            raise ApiError(f"{self.server}{path}: the server did not answer with JSON") from None
        if not isinstance(doc, dict):
            raise ApiError(f"{self.server}{path}: unexpected answer (not an object)")
        return doc

    def exchange(self, method: str, path: str, query: Sequence[tuple[str, str]] = (), body: Any = None,
                 content_type: str = "application/json") -> bytes:
        """One request and its retries; the body of a successful answer, else :class:`ApiError`."""
        headers = {"Accept": "application/json", **self.headers}
        if body is not None:
            headers["Content-Type"] = content_type
        method, url, header_params, serialized, _ = self.api_client.param_serialize(
            method=method, resource_path=path, query_params=list(query), body=body,
            header_params=headers, auth_settings=["BearerToken"],
        )
        deadline = self.clock() + self.budget if self.budget else None
        retries = {"status": 0, "connect": 0}
        while True:
            left = None if deadline is None else max(0.001, deadline - self.clock())
            timeout = self.timeout if left is None else (
                (min(self.timeout[0], left), min(self.timeout[1], left)) if isinstance(self.timeout, tuple) else left)
            try:
                status, reason_text, answer_headers, data = self._attempt(
                    method, url, header_params, serialized, timeout, deadline, path)
            except NoAnswer as exc:
                reason: object = exc.reason
            else:
                if status not in RETRY_STATUSES or method != "GET" or retries["status"] >= STATUS_RETRIES:
                    break
                asked = retry_after(answer_headers.get("Retry-After"), time.time())
                if self._wait(asked if asked is not None else BACKOFF * 2 ** retries["status"], deadline):
                    retries["status"] += 1
                    continue
                if asked is not None and deadline is not None:
                    raise ApiError(f"{status_message(status, data, reason_text)} (HTTP "
                                   f"{status}); the API server asked to retry after {asked:g}s, past "
                                   "--request-timeout", status=status)
                break
            refused = "refused" in str(reason).lower()  # nothing was sent: safe to try again
            if method == "GET" and refused and not _is_tls(reason) and retries["connect"] < CONNECT_RETRIES \
                    and self._wait(BACKOFF * 2 ** retries["connect"], deadline):
                retries["connect"] += 1
                continue
            raise ApiError(self._unreachable(reason)) from None
        if status == 401:
            raise ApiError(f"the API server at {self.server} refused {self.credential}: "
                           f"{status_message(status, data, reason_text)} (HTTP 401)", status=401)
        if status in (403, 404):  # the caller says which kind could not be read
            raise ApiError(status_message(status, data, reason_text), status=status)
        if status >= 400:
            tries = f", after {retries['status']} {'retry' if retries['status'] == 1 else 'retries'}" \
                if retries["status"] else ""
            raise ApiError(f"{status_message(status, data, reason_text)} (HTTP {status} "
                           f"{reason_text or ''}".rstrip() + f" from {method} {url}{tries})", status=status)
        return data

    def _attempt(self, method: str, url: str, headers: dict, body: Any, timeout, deadline: float | None,
                 path: str) -> tuple[int, str, Mapping[str, str], bytes]:
        """Send one request and read its whole answer: (status, reason, headers, body). Raises
        :class:`NoAnswer` when no answer came (refused, reset, timed out, TLS)."""
        # start-up: offline
        import urllib3

        try:
            response = self.api_client.call_api(method, url, header_params=headers, body=body,
                                                _request_timeout=timeout)
            data = self._read(response, deadline, method, path)
        except urllib3.exceptions.MaxRetryError as exc:
            raise NoAnswer(exc.reason) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise NoAnswer(exc) from None
        except ApiError:
            raise
        except Exception as exc:  # the client wraps TLS failures in ApiException(status=0)
            if getattr(exc, "status", None) != 0:
                raise
            raise NoAnswer(getattr(exc, "reason", exc)) from None
        return response.status, response.reason, response.headers, data

    def _read(self, response, deadline: float | None, method: str, path: str) -> bytes:
        """The whole answer, within the deadline: a server that sends its headers and then a byte
        every half second keeps every socket read short, so the socket's timeout never fires; a
        timer shuts the connection down at the deadline instead."""
        raw = getattr(response, "response", None)
        if deadline is None or raw is None or not hasattr(raw, "shutdown"):
            return response.read()
        fired = threading.Event()

        def stop() -> None:
            fired.set()
            raw.shutdown()

        timer = threading.Timer(max(0.0, deadline - self.clock()), stop)
        timer.daemon = True
        timer.start()
        try:
            data = response.read()
        except Exception:
            if not fired.is_set():
                raise
            data = b""
        finally:
            timer.cancel()
        if fired.is_set():
            raise ApiError(f"the API server at {self.server} did not finish its answer to {method} {path} within "
                           f"the request timeout ({self.budget:g}s; --request-timeout sets it)")
        return data

    def _wait(self, seconds: float, deadline: float | None) -> bool:
        """Sleep before a retry if the wait fits in the request's time budget."""
        if deadline is not None and self.clock() + seconds >= deadline:
            return False
        self.sleep(seconds)
        return True

    def watch(self, path: str, query: Sequence[tuple[str, str]], timeout: float,
              opened: Callable[[Any], None] | None = None):
        """Yield watch events (decoded JSON lines) until the server ends the stream. ``opened``
        receives the response once it is open, so another thread can end the stream at once
        (``shutdown()``) instead of waiting for the server's next word."""
        # start-up: offline
        import urllib3

        method, url, header_params = self._watch_request(path, query)
        try:
            response = self.api_client.rest_client.pool_manager.request(
                method, url, headers=header_params, preload_content=False, retries=False,
                timeout=urllib3.Timeout(connect=self.timeout[0] if isinstance(self.timeout, tuple) else self.timeout,
                                        read=timeout))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(self._unreachable(exc)) from None
        if opened is not None:
            opened(response)
        try:
            if response.status >= 400:
                raise ApiError(status_message(response.status, response.read(), response.reason),
                               status=response.status)
            try:
                yield from json_lines(response.stream(4096))
            except (urllib3.exceptions.HTTPError, OSError, ValueError):
                return
        finally:
            response.release_conn()

    def _watch_request(self, path: str, query: Sequence[tuple[str, str]]) -> tuple[str, str, dict]:
        """A watch's method, URL and headers, the credential read afresh."""
        headers = {"Accept": "application/json", **self.headers}
        method, url, header_params, _, _ = self.api_client.param_serialize(
            method="GET", resource_path=path, query_params=[*query, ("watch", "1")],
            header_params=headers, auth_settings=["BearerToken"])
        return method, url, header_params

    def _unreachable(self, reason: object) -> str:
        text = str(reason)
        if "CERTIFICATE_VERIFY_FAILED" in text or "SSLError" in text or "certificate" in text.lower():
            return (f"TLS error talking to {self.server}: {_short(text)} "
                    "(check certificate-authority, or --insecure-skip-tls-verify for a test cluster)")
        if "timed out" in text.lower() or "timeout" in text.lower():
            return f"the API server at {self.server} did not answer in time ({_short(text)})"
        return f"cannot reach the API server at {self.server}: {_short(text)}"


_REASONS = {  # what urllib3/OpenSSL say, and how we say it
    "Connection refused": "connection refused",
    "Name or service not known": "unknown host",
    "No route to host": "no route to host",
    "Connection reset": "connection reset",
    "CERTIFICATE_VERIFY_FAILED": "CERTIFICATE_VERIFY_FAILED",
    "timed out": "timed out",
}


def _short(text: str) -> str:
    """urllib3 reasons embed object reprs; keep the part a user can act on."""
    for marker, said in _REASONS.items():
        if marker in text:
            return said
    return text.splitlines()[0][:200] if text else "unknown error"
