"""Daphne's HTTP parser with bounds: a body is refused before it is read, and never held whole in memory.

How Daphne 4 handles a body (measured: bench/upload_memory.py): Twisted's
`http.Request` receives all of it before the ASGI application is even
called (a BytesIO under 100 kB, a temporary file above), then

1. for a `multipart/form-data` POST, Twisted reads the whole body into memory
   and parses it with the `email` package into `request.args` (Daphne never
   uses them): a 300 MiB upload grew the process by about 4 GiB, and a body
   without a boundary got a bare `400` with no content;
2. Daphne then queues the whole body for the application at once, in 8 KiB
   chunks (the body in memory again), and Django's `ASGIHandler` copies it
   into a SpooledTemporaryFile (memory up to FILE_UPLOAD_MAX_MEMORY_SIZE,
   disk above).

So an ASGI middleware alone comes too late under Daphne. `BoundedWebRequest`
decides from the request line and headers (`elion.base.request_bounds`), once
they are in and before any byte of the body: a refused request is answered
at once (413 / 401 / a redirect to the login page, `Connection: close`), its
body discarded as it arrives (never stored), an `Expect: 100-continue` client
not invited to send it. A large body whose only credential is a session
cookie waits, its connection's reads paused, until a worker thread has
verified the session (`request_bounds.session_refusal`): a cookie that is not
the owner's live session is refused the same way (issue 41, item 15). A chunked body is counted as it arrives and refused
once it passes the route's limit. Twisted's form parsing is off: Django
parses forms itself (multipart streamed to disk past 2.5 MiB).

A request line or header longer than Twisted's 16 KiB line limit answers
414 `request_line_too_long` instead of a dropped connection.

`install()` puts these classes into Daphne's server; `elion.asgi` calls it,
so `daphne elion.asgi:application` (run.sh, the Procfile, the tests' servers)
gets them. The ASGI layer `elion.web.body_guard` applies the same rules for any
other server, and again under Daphne.
"""

from __future__ import annotations

import json
import logging
from urllib.parse import unquote

from daphne import http_protocol
from daphne import server as daphne_server
from twisted.internet import threads

from elion.base.request_bounds import (
    body_limit,
    early_refusal,
    http_response_bytes,
    session_refusal,
    session_to_check,
    too_large,
)

logger = logging.getLogger(__name__)

LINE_TOO_LONG = (
    b"HTTP/1.1 414 URI Too Long\r\nContent-Type: application/json\r\nConnection: close\r\n"
    b"Content-Length: %d\r\n\r\n%s"
)
LINE_TOO_LONG_BODY = json.dumps({
    "error": "request_line_too_long",
    "detail": "The request line or a header is longer than 16 KiB.",
}).encode()


class _Discarded:
    """The body of a refused request: counted, never stored."""

    closed = False

    def __init__(self) -> None:
        self.size = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)

    def tell(self) -> int:
        return 0

    def seek(self, *args: object) -> int:
        return 0

    def read(self, *args: object) -> bytes:
        return b""

    def close(self) -> None:
        self.closed = True


class BoundedWebRequest(http_protocol.WebRequest):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        # Django parses forms; Twisted's parse would read a multipart body into memory whole.
        self._parsePOSTFormSubmission = False
        self._refused = False
        self._limit: int | None = None
        self._received = 0
        self._session_pending = False
        self._expects_continue = False
        self._waiting_request: tuple[bytes, bytes, bytes] | None = None

    def gotLength(self, length: int | None) -> None:
        super().gotLength(length)
        path = self._request_path()
        chunked = length is None and any(
            value.lower() == b"chunked" for value in self.requestHeaders.getRawHeaders(b"Transfer-Encoding", [])
        )
        headers = _flat_headers(self.requestHeaders)
        refusal = early_refusal(path, headers, length, chunked)
        if refusal is not None:
            self._refuse(http_response_bytes(refusal))
            return
        if chunked:
            self._limit = body_limit(path)
        session_key = session_to_check(path, headers, length, chunked)
        if session_key is not None:
            self._check_session(path, session_key)

    def _check_session(self, path: str, session_key: str) -> None:
        """Read no more of the body until the session is known to be the owner's: the connection's reads
        pause (what already arrived, at most one read, is kept), the check runs in a worker thread (it reads
        the database), then the body is read on, or refused unread."""
        self._session_pending = True
        self.channel._networkProducer.pauseProducing()
        # `100 Continue` only once the session is known to be the owner's.
        self._expects_continue = bool(self.requestHeaders.getRawHeaders(b"Expect"))
        self.requestHeaders.removeHeader(b"Expect")
        checked = threads.deferToThread(session_refusal, path, session_key)
        checked.addCallbacks(self._session_checked, self._session_check_failed)

    def _session_checked(self, refusal: object) -> None:
        self._session_pending = False
        if self.channel is None or self.channel.transport is None:
            return  # the client went away meanwhile
        if refusal is not None:
            self._refuse(http_response_bytes(refusal))
        elif self._expects_continue and self._waiting_request is None:
            self.channel._send100Continue()
        self.channel._networkProducer.resumeProducing()
        if self._waiting_request is not None:
            waiting, self._waiting_request = self._waiting_request, None
            self.requestReceived(*waiting)

    def _session_check_failed(self, failure: object) -> None:
        logger.warning("session check failed: %s", failure)
        self._session_checked(None)

    def handleContentChunk(self, data: bytes) -> None:
        self._received += len(data)
        if self._limit is not None and not self._refused and self._received > self._limit:
            self._refuse(http_response_bytes(too_large(self._request_path(), self._limit)))
        self.content.write(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if self._session_pending:
            # The whole body came in before the session check answered: it waits for the answer.
            self._waiting_request = (command, path, version)
            return
        if self._refused:
            # The answer went out when the headers arrived; the body has been drained.
            if self.channel is not None and self.channel.transport is not None:
                self.channel.transport.loseConnection()
            return
        super().requestReceived(command, path, version)

    def _request_path(self) -> str:
        raw = getattr(self.channel, "_path", b"") or b""
        return unquote(raw.split(b"?", 1)[0].decode("ascii", "replace"))

    def _refuse(self, response: bytes) -> None:
        logger.warning("refused before reading the body: %s", response.split(b"\r\n", 1)[0].decode())
        self._refused = True
        old, self.content = self.content, _Discarded()
        if old is not None:
            old.close()
        self.requestHeaders.removeHeader(b"Expect")  # no `100 Continue`: the answer is final
        self.channel.transport.write(response)


def _flat_headers(headers: object) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, values in headers.getAllRawHeaders() for value in values]


class BoundedHTTPFactory(http_protocol.HTTPFactory):
    def buildProtocol(self, addr: object) -> object:
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = BoundedWebRequest
        channel = getattr(protocol, "_channel", protocol)

        def line_too_long(line: bytes = b"") -> None:
            channel.transport.write(LINE_TOO_LONG % (len(LINE_TOO_LONG_BODY), LINE_TOO_LONG_BODY))
            channel.transport.loseConnection()

        channel.lineLengthExceeded = line_too_long
        return protocol


def install() -> None:
    """Daphne's server builds its HTTP factory from this module from now on."""
    daphne_server.HTTPFactory = BoundedHTTPFactory
