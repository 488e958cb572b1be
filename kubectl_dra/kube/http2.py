"""The node agent's session: every request and every watch over one HTTP/2 connection, as a
kubelet's client-go holds them (docs/kubernetes/kubelet-api-traffic.md §4).

Over HTTP/1.1 each open watch is a TCP connection and a TLS session of its own: an agent that
follows its pods, its Node and eight claims holds ten, where the kubelet beside it holds one.
This session multiplexes everything through libcurl (pycurl; docs/architecture.md §6 says why
that client and not httpx): one connection, a stream per request, driven by one thread that
owns libcurl's multi handle. What a request does around its transport (the timeouts, the
retries of 429/5xx and refused connections, Retry-After, the credentials read afresh for each
request, the messages) is :class:`~kubectl_dra.kube.client.Session`'s, unchanged.

Because the connection is shared:
- an answer's deadline is libcurl's whole-transfer timeout, not a socket shutdown (that would end
  every stream); a read timeout is "less than 1 byte a second for that many seconds";
- a watch that is closed is removed from the multi handle, which resets its stream (RST_STREAM)
  and leaves the others running;
- a connection the server drops fails every stream on it at once; the next request opens a new
  one. A server that does not offer h2 (a proxy on the way) gets HTTP/1.1, a connection per
  open request, as before; past the server's limit of concurrent streams (kube-apiserver
  advertises 100) libcurl opens a second connection.
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import socket
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

import certifi
import pycurl

from kubectl_dra.errors import ApiError
from kubectl_dra.kube.client import NoAnswer, Session, json_lines, status_message

_VERSIONS = {pycurl.CURL_HTTP_VERSION_1_0: "HTTP/1.0", pycurl.CURL_HTTP_VERSION_1_1: "HTTP/1.1",
             pycurl.CURL_HTTP_VERSION_2_0: "HTTP/2", pycurl.CURL_HTTP_VERSION_3: "HTTP/3"}
SLOW = 1  # bytes a second below which a transfer counts as silent (libcurl's LOW_SPEED_LIMIT)


class Headers(dict):
    """An answer's headers, looked up without regard to case (HTTP/2 sends them in lower case)."""

    def get(self, key, default=None):
        return super().get(key.lower(), default)


class _Driver:
    """libcurl's multi handle and the one thread that drives it: the callers' threads hand it
    transfers to start or stop and wait for what they need (libcurl handles are not shared
    between threads)."""

    def __init__(self):
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_PIPELINING, pycurl.PIPE_MULTIPLEX)
        self.multi.setopt(pycurl.M_SOCKETFUNCTION, self._socket)
        self.multi.setopt(pycurl.M_TIMERFUNCTION, self._timer)
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)
        self.commands: queue.SimpleQueue = queue.SimpleQueue()
        self.transfers: dict[int, _Transfer] = {}
        self.due: float | None = None  # when libcurl's timer asks to be called (monotonic)
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name="http2", daemon=True)
        self.thread.start()

    # -- called from any thread --------------------------------------------------------------

    def start(self, transfer: "_Transfer") -> None:
        if self.stopped or not self.thread.is_alive():  # closed, or its thread died: never wait on it
            transfer.finish(pycurl.E_ABORTED_BY_CALLBACK, "the session was closed")
            return
        self._command(("add", transfer))

    def cancel(self, transfer: "_Transfer") -> None:
        self._command(("remove", transfer))

    def stop(self) -> None:
        self.stopped = True  # a transfer started from now on fails at once
        self._command(("stop", None))

    def _command(self, command) -> None:
        self.commands.put(command)
        try:
            self.wake_w.send(b"\0")
        except OSError:  # stopped: the socket pair is closed
            pass

    # -- the driver's thread -------------------------------------------------------------------

    def _socket(self, what: int, fd: int, multi, data) -> None:
        if what == pycurl.POLL_REMOVE:
            try:
                self.selector.unregister(fd)
            except (KeyError, ValueError):
                pass
            return
        events = {pycurl.POLL_IN: selectors.EVENT_READ, pycurl.POLL_OUT: selectors.EVENT_WRITE,
                  pycurl.POLL_INOUT: selectors.EVENT_READ | selectors.EVENT_WRITE}.get(what, selectors.EVENT_READ)
        try:
            self.selector.modify(fd, events, fd)
        except KeyError:
            self.selector.register(fd, events, fd)

    def _timer(self, ms: int) -> None:
        self.due = None if ms < 0 else time.monotonic() + ms / 1000

    def _run(self) -> None:
        try:
            while not self.stopped:
                wait = None if self.due is None else max(0.0, self.due - time.monotonic())
                for key, mask in self.selector.select(wait):
                    if key.data is None:
                        self._drain_commands()
                        continue
                    flags = (pycurl.CSELECT_IN if mask & selectors.EVENT_READ else 0) | \
                            (pycurl.CSELECT_OUT if mask & selectors.EVENT_WRITE else 0)
                    self._act(key.data, flags)
                if self.due is not None and time.monotonic() >= self.due:
                    self.due = None
                    self._act(pycurl.SOCKET_TIMEOUT, 0)
                self._finished()
        finally:
            self._close()

    def _act(self, fd: int, flags: int) -> None:
        try:
            self.multi.socket_action(fd, flags)
        except pycurl.error:  # a socket libcurl no longer knows: its transfers end through info_read
            pass

    def _drain_commands(self) -> None:
        try:
            while self.wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                what, transfer = self.commands.get_nowait()
            except queue.Empty:
                return
            if what == "add":
                if self.stopped:
                    transfer.finish(pycurl.E_ABORTED_BY_CALLBACK, "the session was closed")
                    continue
                self.transfers[id(transfer.curl)] = transfer
                self.multi.add_handle(transfer.curl)
                self._act(pycurl.SOCKET_TIMEOUT, 0)
            elif what == "remove":
                if self.transfers.pop(id(transfer.curl), None) is not None:
                    self.multi.remove_handle(transfer.curl)
                    transfer.finish(None, None)
            else:
                self.stopped = True

    def _finished(self) -> None:
        while True:
            left, done, failed = self.multi.info_read()
            for curl in done:
                self._end(curl, None, None)
            for curl, code, message in failed:
                self._end(curl, code, message)
            if not left:
                return

    def _end(self, curl, code, message) -> None:
        transfer = self.transfers.pop(id(curl), None)
        self.multi.remove_handle(curl)
        if transfer is not None:
            transfer.finish(code, message)

    def _close(self) -> None:
        self.stopped = True  # also when the loop ended on an error
        self._drain_commands()  # transfers handed over while the loop ended: stopped, so each fails
        for transfer in list(self.transfers.values()):
            self.multi.remove_handle(transfer.curl)
            transfer.finish(pycurl.E_ABORTED_BY_CALLBACK, "the session was closed")
        self.transfers.clear()
        self.multi.close()
        self.selector.close()
        self.wake_r.close()
        self.wake_w.close()


class _Transfer:
    """One request on the shared connection; its status line, headers and body, then its end."""

    def __init__(self, session: "Http2Session", method: str, url: str, headers: Mapping[str, str],
                 body: bytes | None, connect: float | None, read: float | None, total: float | None,
                 stream: bool = False):
        self.session = session
        self.status, self.reason, self.headers = 0, "", Headers()
        self.chunks: list[bytes] = []
        self.items: queue.SimpleQueue | None = queue.SimpleQueue() if stream else None
        self.opened = threading.Event()  # the headers are in (or the transfer ended first)
        self.done = threading.Event()
        self.error: tuple[int, str] | None = None
        c = self.curl = pycurl.Curl()
        c.setopt(pycurl.NOSIGNAL, 1)
        url = session.rewrite(url)
        c.setopt(pycurl.URL, url)
        c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_2TLS)
        c.setopt(pycurl.PIPEWAIT, 1)  # wait to share the connection rather than open another
        c.setopt(pycurl.ACCEPT_ENCODING, "gzip")
        # a peer gone without a word is found in about 3 minutes, not at the next read timeout
        # (client-go pings an HTTP/2 connection idle for 30 s instead; libcurl's multi handle cannot)
        c.setopt(pycurl.TCP_KEEPALIVE, 1)
        c.setopt(pycurl.TCP_KEEPIDLE, 30)
        c.setopt(pycurl.TCP_KEEPINTVL, 15)
        if method == "GET":
            c.setopt(pycurl.HTTPGET, 1)
        else:
            c.setopt(pycurl.CUSTOMREQUEST, method)
            c.setopt(pycurl.POSTFIELDSIZE, len(body or b""))
            c.setopt(pycurl.POSTFIELDS, body or b"")
        c.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in headers.items()] + ["Expect:"])
        session.tls(c)
        if connect:
            c.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(connect * 1000)))
        if read:
            c.setopt(pycurl.LOW_SPEED_LIMIT, SLOW)
            c.setopt(pycurl.LOW_SPEED_TIME, max(1, int(read + 0.999)))
        if total:
            c.setopt(pycurl.TIMEOUT_MS, max(1, int(total * 1000)))
        c.setopt(pycurl.HEADERFUNCTION, self._header)
        c.setopt(pycurl.WRITEFUNCTION, self._write)
        self.sent = len(body or b"")

    def _header(self, line: bytes) -> None:
        text = line.decode("iso-8859-1").rstrip("\r\n")
        if text.startswith("HTTP/"):
            parts = text.split(" ", 2)
            self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            self.reason = parts[2] if len(parts) > 2 else ""
            self.headers = Headers()
        elif ":" in text:
            key, value = text.split(":", 1)
            self.headers[key.strip().lower()] = value.strip()
        elif not text and self.status >= 200:
            self.opened.set()

    def _write(self, data: bytes) -> None:
        self.session.count(received=len(data))
        if self.items is not None and self.status < 400:
            self.items.put(data)
        else:
            self.chunks.append(data)

    def finish(self, code: int | None, message: str | None) -> None:
        """The driver's thread: the transfer ended (code None: completely, or it was cancelled)."""
        if code is not None:
            self.error = (code, self._reason(code, message))
        try:
            self.session.count(received=self.curl.getinfo(pycurl.HEADER_SIZE),
                               sent=self.sent + self.curl.getinfo(pycurl.REQUEST_SIZE),
                               version=_VERSIONS.get(self.curl.getinfo(pycurl.INFO_HTTP_VERSION)))
        except pycurl.error:
            pass
        try:
            self.curl.close()
        except pycurl.error:
            pass
        self.opened.set()
        self.done.set()
        if self.items is not None:
            self.items.put(None)

    def shutdown(self) -> None:
        """Stop the transfer now, from any thread (a watch's ``close()``): libcurl resets its stream."""
        if not self.done.is_set():
            self.session.driver.cancel(self)

    def _reason(self, code: int, message: str | None) -> str:
        text = message or f"libcurl error {code}"
        if code == pycurl.E_COULDNT_CONNECT:
            number = self.curl.getinfo(pycurl.OS_ERRNO)
            if number:
                text = f"{os.strerror(number)} ({text})"  # "Connection refused": nothing was sent
        elif code == pycurl.E_OPERATION_TIMEDOUT and "timed out" not in text.lower():
            text = f"timed out ({text})"
        return text


class Http2Session(Session):
    """A :class:`Session` whose requests and watches share one HTTP/2 connection."""

    def __init__(self, configuration, **kwargs):
        super().__init__(configuration, **kwargs)
        self.driver = _Driver()
        self.lock = threading.Lock()
        self.protocols: set[str] = set()  # what the answers came in ("HTTP/2"; "HTTP/1.1" through a proxy without h2)
        self.received = self.sent = 0  # decoded bytes of every answer and request, headers included
        self._connect_to: list[str] = []
        self._host = None
        name = getattr(configuration, "tls_server_name", None)
        if name:  # SNI and the certificate check name the server by this name; connect to the host
            parts = urlsplit(configuration.host)
            port = parts.port or 443
            self._host = (parts.hostname, name)
            self._connect_to = [f"{name}:{port}:{parts.hostname}:{port}"]

    def close(self) -> None:
        self.driver.stop()
        super().close()

    def rewrite(self, url: str) -> str:
        if self._host is None:
            return url
        parts = urlsplit(url)
        host, name = self._host
        return urlunsplit(parts._replace(netloc=parts.netloc.replace(host, name, 1)))

    def tls(self, curl) -> None:
        c = self.configuration
        if self._connect_to:
            curl.setopt(pycurl.CONNECT_TO, self._connect_to)
        if not str(c.host).lower().startswith("https://"):
            return
        if c.verify_ssl:
            # without a cluster CA, the bundle the official client (urllib3) would use
            curl.setopt(pycurl.CAINFO, c.ssl_ca_cert or certifi.where())
        else:
            curl.setopt(pycurl.SSL_VERIFYPEER, 0)
            curl.setopt(pycurl.SSL_VERIFYHOST, 0)
        if c.cert_file:
            curl.setopt(pycurl.SSLCERT, c.cert_file)
        if c.key_file:
            curl.setopt(pycurl.SSLKEY, c.key_file)
        if c.proxy:
            curl.setopt(pycurl.PROXY, c.proxy)

    def count(self, received: int = 0, sent: int = 0, version: str | None = None) -> None:
        """Bytes as they come (a watch's body chunk by chunk; headers and the request when the
        transfer ends), and the protocol of each answer."""
        with self.lock:
            self.received += received
            self.sent += sent
            if version:
                self.protocols.add(version)

    @staticmethod
    def _split(timeout) -> tuple[float | None, float | None]:
        if isinstance(timeout, tuple):
            return timeout
        return timeout, timeout

    def _attempt(self, method: str, url: str, headers: dict, body: Any, timeout, deadline: float | None,
                 path: str) -> tuple[int, str, Mapping[str, str], bytes]:
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)  # param_serialize has made it plain JSON values already
        data = body.encode() if isinstance(body, str) else body
        connect, read = self._split(timeout)
        total = None if deadline is None else max(0.001, deadline - self.clock())
        transfer = _Transfer(self, method, url, headers, data, connect, read, total)
        self.driver.start(transfer)
        transfer.done.wait()
        if transfer.error is not None:
            code, reason = transfer.error
            if code == pycurl.E_OPERATION_TIMEDOUT and deadline is not None and self.clock() >= deadline \
                    and transfer.status:
                raise ApiError(f"the API server at {self.server} did not finish its answer to {method} {path} "
                               f"within the request timeout ({self.budget:g}s; --request-timeout sets it)")
            raise NoAnswer(reason)
        return transfer.status, transfer.reason, transfer.headers, b"".join(transfer.chunks)

    def watch(self, path: str, query: Sequence[tuple[str, str]], timeout: float,
              opened: Callable[[Any], None] | None = None) -> Iterator[Any]:
        """Yield watch events until the server ends the stream; ``opened`` gets a handle whose
        ``shutdown()`` ends this generator (and resets the stream) from another thread."""
        method, url, header_params = self._watch_request(path, query)
        connect, _ = self._split(self.timeout)
        transfer = _Transfer(self, method, url, header_params, None, connect, timeout, None, stream=True)
        self.driver.start(transfer)
        transfer.opened.wait()
        if transfer.error is not None and not transfer.status:
            raise ApiError(self._unreachable(transfer.error[1])) from None
        if opened is not None:
            opened(transfer)
        try:
            if transfer.status >= 400:
                transfer.done.wait()
                raise ApiError(status_message(transfer.status, b"".join(transfer.chunks), transfer.reason),
                               status=transfer.status)
            try:
                yield from json_lines(iter(transfer.items.get, None))
            except ValueError:
                return
        finally:
            transfer.shutdown()
