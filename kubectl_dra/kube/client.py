"""One HTTP session with an API server, through the official client, returning raw JSON.

DRA and scheduling objects change shape between minor versions, so we fetch raw JSON and parse
it into our own tolerant views (ecosystem.md §2.3) instead of the client's strict models. Every
call carries a timeout; GETs are retried on 429/5xx by urllib3's ``Retry`` (honouring
Retry-After), which the client installs in its connection pool.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from kubectl_dra.errors import ApiError

DEFAULT_TIMEOUT = (10.0, 60.0)
"""(connect, read) seconds when the user did not pass ``--request-timeout``."""

RETRY_STATUSES = (429, 500, 502, 503, 504)


def retry_policy(total: int = 4, backoff: float = 0.25):
    from urllib3.util.retry import Retry

    return Retry(
        total=total,
        connect=2,
        read=0,  # a read timeout is not retried: the user asked for a bound
        status=total,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET", "HEAD"}),
        backoff_factor=backoff,
        respect_retry_after_header=True,
        raise_on_status=False,
    )


def status_message(status: int, body: bytes, fallback: str) -> str:
    """The ``message`` of a Kubernetes Status body, or the HTTP reason."""
    try:
        doc = json.loads(body)
        if isinstance(doc, dict) and doc.get("message"):
            return str(doc["message"])
    except ValueError:
        pass
    return fallback or f"HTTP {status}"


class Session:
    """GET JSON from one API server with the user's credentials, timeout and impersonation."""

    def __init__(self, configuration, *, request_timeout: float | None = None,
                 headers: Mapping[str, Any] | None = None, retries=None):
        from kubernetes.client import ApiClient

        if configuration.retries is None:
            configuration.retries = retries if retries is not None else retry_policy()
        self.configuration = configuration
        self.api_client = ApiClient(configuration)
        self.timeout = request_timeout if request_timeout else DEFAULT_TIMEOUT
        self.headers = dict(headers or {})
        self.server = configuration.host

    def close(self) -> None:
        self.api_client.close()

    def get(self, path: str, query: Sequence[tuple[str, str]] = ()) -> dict:
        """GET ``path`` and return the decoded JSON object; raise :class:`ApiError` otherwise."""
        return self.request("GET", path, query)

    def request(self, method: str, path: str, query: Sequence[tuple[str, str]] = (), body: Any = None,
                content_type: str = "application/json") -> dict:
        """One request; writes (the agent's report and Events) are not retried by the pool."""
        import urllib3

        headers = {"Accept": "application/json", **self.headers}
        if body is not None:
            headers["Content-Type"] = content_type
        method, url, header_params, serialized, _ = self.api_client.param_serialize(
            method=method, resource_path=path, query_params=list(query), body=body,
            header_params=headers, auth_settings=["BearerToken"],
        )
        try:
            response = self.api_client.call_api(method, url, header_params=header_params, body=serialized,
                                                _request_timeout=self.timeout)
            body = response.read()
        except urllib3.exceptions.MaxRetryError as exc:
            raise ApiError(self._unreachable(exc.reason)) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(self._unreachable(exc)) from None
        except Exception as exc:  # the client wraps TLS failures in ApiException(status=0)
            if getattr(exc, "status", None) == 0:
                raise ApiError(self._unreachable(getattr(exc, "reason", exc))) from None
            raise
        if response.status >= 400:
            raise ApiError(status_message(response.status, body, response.reason), status=response.status)
        try:
            doc = json.loads(body)
        except ValueError:
            raise ApiError(f"{self.server}{path}: the server did not answer with JSON") from None
        if not isinstance(doc, dict):
            raise ApiError(f"{self.server}{path}: unexpected answer (not an object)")
        return doc

    def watch(self, path: str, query: Sequence[tuple[str, str]], timeout: float):
        """Yield watch events (decoded JSON lines) until the server ends the stream."""
        import urllib3

        headers = {"Accept": "application/json", **self.headers}
        method, url, header_params, _, _ = self.api_client.param_serialize(
            method="GET", resource_path=path, query_params=[*query, ("watch", "1")],
            header_params=headers, auth_settings=["BearerToken"])
        try:
            response = self.api_client.rest_client.pool_manager.request(
                method, url, headers=header_params, preload_content=False, retries=False,
                timeout=urllib3.Timeout(connect=self.timeout[0] if isinstance(self.timeout, tuple) else self.timeout,
                                        read=timeout))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ApiError(self._unreachable(exc)) from None
        try:
            if response.status >= 400:
                raise ApiError(status_message(response.status, response.read(), response.reason),
                               status=response.status)
            buffer = b""
            try:
                for chunk in response.stream(4096):
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            yield json.loads(line)
            except (urllib3.exceptions.HTTPError, OSError, ValueError):
                return
        finally:
            response.release_conn()

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
