"""A scripted, OpenAI-compatible HTTP server for tests and benchmarks.

It speaks both the Chat Completions API and the Responses API over loopback,
with the same SSE framing the real service uses, so the official ``openai``
SDK (and therefore the app's real provider gateway) runs unmodified against it.

In-process use::

    with ScriptedProvider() as provider:
        provider.script(ScriptedReply(text="Hello there"), ScriptedReply(status=429))
        client = openai.AsyncOpenAI(base_url=provider.base_url, api_key="test", max_retries=0)
        ...
        assert provider.last_request().body["model"] == "gpt-5.5"

Callers must build their SDK client with ``max_retries=0``: the SDK retries
429/5xx and dropped connections by default, which would silently consume extra
scripted replies and hide exactly the errors a test is trying to provoke.

Standalone use (e.g. a benchmark driving the app in another process)::

    python -m tests.support.scripted_provider --port 8765

It prints ``BASE_URL http://127.0.0.1:8765/v1`` once listening and stops
cleanly on SIGTERM or SIGINT. Control endpoints:

* ``POST /_control/script``   JSON list of reply dicts (``ScriptedReply`` fields;
  ``hold`` is a *name*, released with ``/_control/release``)
* ``POST /_control/script-images``  JSON list of ``ScriptedImage`` dicts, for ``POST /v1/images/generations``
* ``POST /_control/script-transcriptions`` / ``script-speech``  JSON lists of ``ScriptedTranscription`` /
  ``ScriptedSpeech`` dicts, for ``POST /v1/audio/transcriptions`` and ``/v1/audio/speech``
  (``tests/support/scripted_audio.py``)
* ``POST /_control/release``  ``{"name": "..."}`` releases one hold, ``{}`` all
* ``GET  /_control/requests`` every recorded request as JSON
* ``POST /_control/clear``    forget recorded requests and queued replies

It needs the `openai` package (and pydantic, which it brings): requests are checked against the SDK's
request types and events built from its event models (`tests/support/wire_contract.py`).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import hashlib
import hmac
import json
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from tests.support import scripted_audio
from tests.support.scripted_audio import ScriptedSpeech, ScriptedTranscription
from tests.support.wire_contract import request_problem, sdk_event

DEFAULT_CHUNKS = ("Scripted", " reply", ".")
KNOWN_MODELS = ("gpt-5.5", "gpt-5.5-mini", "scripted-model")

# OpenAI-style error "type"/"code" per status, so SDK error parsing sees realistic bodies.
_ERROR_KINDS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


class _Dropped(Exception):
    """Raised inside a handler to abandon a reply mid-stream."""


def tiny_png(rgb: tuple[int, int, int] = (200, 120, 40), side: int = 2) -> bytes:
    """A small, valid PNG of one colour (stdlib only): what the scripted image endpoints return."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes(rgb) * side for _ in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def tiny_png_b64(rgb: tuple[int, int, int] = (200, 120, 40)) -> str:
    return base64.b64encode(tiny_png(rgb)).decode("ascii")


PARTIAL_COLOURS = ((40, 40, 40), (90, 90, 90), (150, 150, 150))


@dataclass
class ScriptedImage:
    """One answer of ``POST /v1/images/generations``; with nothing set, a small valid PNG as ``b64_json``."""

    b64: str | None = None  # the `b64_json` to send (e.g. junk, to test a bad image); None → a tiny PNG
    status: int = 200  # >= 400 → an OpenAI-style error body with this status
    error_code: str | None = None  # with status >= 400, e.g. "moderation_blocked"
    error_message: str | None = None
    revised_prompt: str | None = None
    hold: threading.Event | None = None  # request recorded, nothing answered until set (or the client hangs up)


@dataclass
class ScriptedImageCall:
    """A Responses `image_generation_call` output item inside a ``ScriptedReply`` (``images``).

    Streams ``partials`` partial images, then the finished item with ``b64`` (None → a tiny PNG) as
    its `result`; with ``error`` ({"code", "message"}) the item fails instead, with no result.
    """

    partials: int = 2
    b64: str | None = None
    error: dict[str, str] | None = None
    revised_prompt: str = "A small scripted picture."


@dataclass
class ScriptedReply:
    """One scripted answer. With nothing set it produces the default text reply."""

    text: str | None = None
    chunks: list[str] | None = None
    # Each: {"name": str, "arguments": dict, "call_id": str (optional)}. Emitted before any text.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    delay_before_first: float = 0.0  # seconds before the status line is sent
    delay_between_chunks: float = 0.0
    status: int = 200  # >= 400 → OpenAI-style JSON error body with this status
    error_message: str | None = None
    retry_after: str | None = None  # with status >= 400: the Retry-After header to send
    drop_after_chunks: int | None = None  # send N content chunks (text/argument deltas), then cut
    hold: threading.Event | None = None  # after the first chunk (or hold_after_chunks), block until set
    hold_after_chunks: int = 1
    holding: threading.Event | None = None  # set by the server once it is blocked on `hold` (chunks sent so far)
    hold_before_response: threading.Event | None = None  # request recorded, nothing answered until set
    # {"input_tokens": n, "output_tokens": m, "cached_tokens": c, "reasoning_tokens": r} (any may be left out)
    usage: dict[str, int] | None = None
    finish: bool = True  # False → end the body cleanly but without the completion event / [DONE]
    # Responses only: one reasoning item per entry, emitted before the tool calls and text, with this
    # summary (streamed when the request asked for `reasoning.summary`; "" for none) and, when the request
    # asked for `include: ["reasoning.encrypted_content"]`, an encrypted content this provider can verify.
    reasoning: list[str] = field(default_factory=list)
    # Responses only: `url_citation` annotations on the text, each {"url", "title", "start", "end"}.
    citations: list[dict[str, Any]] = field(default_factory=list)
    # Responses only: built-in `image_generation_call` items, emitted after the reasoning, before the
    # tool calls and the text (each a ScriptedImageCall or its fields as a dict).
    images: list[Any] = field(default_factory=list)
    # Wire cases of issue 31 (`_message_parts` below): a `refusal` content part with these words (Chat
    # Completions: `delta.refusal`); a reply cut off for this reason (Responses `response.incomplete` with
    # `incomplete_details.reason`; Chat `finish_reason`, "max_output_tokens" sent as "length"); the
    # `phase` of the reply's message item; and a preamble: a `commentary` message item (Chat: content)
    # streamed before the tool calls.
    refusal: str | None = None
    incomplete: str | None = None
    phase: str | None = None
    preamble: str | None = None
    # Responses only: built-in `web_search_call` items, before the text, each {"query", "sources": [url, …]}
    # (the sources sent only when the request's `include` asks for `web_search_call.action.sources`).
    web_searches: list[dict[str, Any]] = field(default_factory=list)
    # After this many content chunks, the stream reports an error and ends (Responses: an `error` event;
    # Chat Completions: an `{"error": …}` chunk, as the API sends them), with this code.
    error_after_chunks: int | None = None
    error_code: str = "server_error"
    # Once this reply is sent, the provider's reasoning secret becomes this: the next request is answered
    # by a key, deployment or model that cannot verify the reasoning items handed out so far (a tool
    # round's follow-up then gets the 400 `invalid_encrypted_content` mid-reply).
    reasoning_secret_after: str | None = None

    def image_calls(self) -> list[ScriptedImageCall]:
        return [i if isinstance(i, ScriptedImageCall) else ScriptedImageCall(**i) for i in self.images]

    def text_chunks(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        if self.text is not None:
            # Word-sized pieces keep leading whitespace, so "".join(pieces) == text.
            return re.findall(r"\s*\S+\s*$|\s*\S+", self.text) or [self.text]
        return [] if self.tool_calls or self.images or self.refusal else list(DEFAULT_CHUNKS)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    # `time.monotonic()` (CLOCK_MONOTONIC: one clock for every process of the machine) when the
    # request line and headers had been read, and when the body had been read and parsed (benches time by them).
    headers_at: float | None = None
    body_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a held reply must never block interpreter exit
    # The stdlib's default listen backlog (5) resets connections when a load bench opens 100 at once.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients vanishing mid-reply (timeouts, killed apps) is normal here, not noise-worthy.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class ScriptedProvider:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._queue: deque[ScriptedReply] = deque()
        self._image_queue: deque[ScriptedImage] = deque()
        self._transcription_queue: deque[ScriptedTranscription] = deque()
        self._speech_queue: deque[ScriptedSpeech] = deque()
        self._requests: list[RecordedRequest] = []
        self._named_holds: dict[str, threading.Event] = {}
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self.abandoned_streams = 0  # held streams whose client hung up
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.default_reply = ScriptedReply()
        # The pacing clock: every pause a reply's delays ask for goes through it. A test replaces it to
        # see the pauses without waiting them out.
        self.sleep: Callable[[float], None] = time.sleep
        # Signs the encrypted content of the reasoning items it hands out; change it to play a provider
        # (a key or a model) that no longer accepts them: such an item is then refused with a 400.
        self.reasoning_secret = uuid.uuid4().hex
        # The provider's prefix cache, simulated: what `cached_tokens` reports (`PromptCache`).
        self.prompt_cache = PromptCache()
        # Check every request body against the installed `openai` package's request types (a 400 otherwise).
        self.validate_requests = True

    # -- lifecycle -------------------------------------------------------
    def start(self) -> Self:
        handler = type("_BoundHandler", (_Handler,), {"provider": self})
        server = _Server((self._host, self._port), handler)
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},  # fast stop() in tests
            name="scripted-provider",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        # Idle keep-alive and held connections would otherwise linger in their threads.
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            _abort(conn)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "ScriptedProvider is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    # -- script and records ----------------------------------------------
    def script(self, *replies: ScriptedReply | dict[str, Any]) -> None:
        with self._lock:
            self._queue.extend(r if isinstance(r, ScriptedReply) else self._reply_from_dict(r) for r in replies)

    def next_reply(self) -> ScriptedReply:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default_reply

    def script_images(self, *images: ScriptedImage | dict[str, Any]) -> None:
        """Queue answers for ``POST /v1/images/generations`` (unscripted: a tiny PNG each time)."""
        with self._lock:
            self._image_queue.extend(i if isinstance(i, ScriptedImage) else ScriptedImage(**i) for i in images)

    def next_image(self) -> ScriptedImage:
        with self._lock:
            return self._image_queue.popleft() if self._image_queue else ScriptedImage()

    def script_transcriptions(self, *answers: ScriptedTranscription | dict[str, Any]) -> None:
        """Queue answers for ``POST /v1/audio/transcriptions`` (unscripted: the default sentence)."""
        with self._lock:
            self._transcription_queue.extend(
                a if isinstance(a, ScriptedTranscription) else ScriptedTranscription(**a) for a in answers
            )

    def script_speech(self, *answers: ScriptedSpeech | dict[str, Any]) -> None:
        """Queue answers for ``POST /v1/audio/speech`` (unscripted: a WAV tone)."""
        with self._lock:
            self._speech_queue.extend(a if isinstance(a, ScriptedSpeech) else ScriptedSpeech(**a) for a in answers)

    def next_transcription(self) -> ScriptedTranscription:
        with self._lock:
            return self._transcription_queue.popleft() if self._transcription_queue else ScriptedTranscription()

    def next_speech(self) -> ScriptedSpeech:
        with self._lock:
            return self._speech_queue.popleft() if self._speech_queue else ScriptedSpeech()

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The recorded requests to one path (e.g. "/v1/images/generations"), in order."""
        return [r for r in self.requests if r.path.split("?", 1)[0].rstrip("/") == path.rstrip("/")]

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def last_request(self) -> RecordedRequest | None:
        with self._lock:
            return self._requests[-1] if self._requests else None

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._queue.clear()
            self._image_queue.clear()
            self._transcription_queue.clear()
            self._speech_queue.clear()
            self.abandoned_streams = 0
        self.prompt_cache.clear()

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def note_abandoned(self) -> None:
        with self._lock:
            self.abandoned_streams += 1

    def release(self, name: str | None = None) -> None:
        """Set a named hold (from the HTTP control API), or every named hold when name is None."""
        with self._lock:
            if name is None:
                events = list(self._named_holds.values())
            else:
                events = [self._named_holds[name]] if name in self._named_holds else []
        for event in events:
            event.set()

    def _reply_from_dict(self, data: dict[str, Any]) -> ScriptedReply:
        data = dict(data)
        hold_name = data.pop("hold", None)
        reply = ScriptedReply(**data)
        if hold_name:
            # Over HTTP a hold is named; the lock is already held by script().
            reply.hold = self._named_holds.setdefault(str(hold_name), threading.Event())
        return reply

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)


def _abort(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


def _peer_closed(conn: socket.socket) -> bool:
    """Did the client close its end (readable with nothing to read)?"""
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class _Handler(BaseHTTPRequestHandler):
    provider: ScriptedProvider
    protocol_version = "HTTP/1.1"  # keep-alive + chunked streams, like the real API

    def setup(self) -> None:
        super().setup()
        self.provider._track(self.connection, True)

    def finish(self) -> None:
        self.provider._track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    # -- plumbing ----------------------------------------------------------
    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex[:16]}")
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex[:16]}")
        self.end_headers()

    def _sse(self, data: Any, event: str | None = None) -> None:
        data = sdk_event(data)  # built from the SDK's event models (tests/support/wire_contract.py)
        text = (f"event: {event}\n" if event else "") + "data: " + (data if isinstance(data, str) else json.dumps(data))
        payload = (text + "\n\n").encode()
        # Chunked framing: a cut connection then surfaces as an incomplete body client-side.
        self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    def _drop(self) -> None:
        self.close_connection = True
        _abort(self.connection)
        raise _Dropped

    # -- routing -----------------------------------------------------------
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/_control/requests":  # control traffic is not recorded
            self._send_json(200, [r.to_json() for r in self.provider.requests])
            return
        self.provider.record(RecordedRequest("GET", self.path, self._lower_headers(), None))
        if path == "/v1/models":
            created = 1700000000
            models = [{"id": m, "object": "model", "created": created, "owned_by": "scripted"} for m in KNOWN_MODELS]
            self._send_json(200, {"object": "list", "data": models})
        else:
            self._send_error(404, f"Unknown path {self.path}")

    def do_POST(self) -> None:
        headers_at = time.monotonic()  # the request line and headers are read; the body is not
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/audio/transcriptions":
            self._transcription_request(headers_at)
            return
        body = self._read_body()
        body_at = time.monotonic()
        if path.startswith("/_control/"):
            self._control(path, body)
            return
        self.provider.record(RecordedRequest("POST", self.path, self._lower_headers(), body, headers_at, body_at))
        if self._refused_by_contract(path, body):
            return
        if path == "/v1/images/generations":
            with contextlib.suppress(_Dropped):
                self._image(self.provider.next_image())
            return
        if path == "/v1/audio/speech":
            self._speech(body if isinstance(body, dict) else {}, self.provider.next_speech())
            return
        if path not in ("/v1/chat/completions", "/v1/responses"):
            self._send_error(404, f"Unknown path {self.path}")
            return
        body = body if isinstance(body, dict) else {}
        if path == "/v1/responses":
            refusal = _responses_input_refusal(body, self.provider.reasoning_secret)
            if refusal is not None:
                code, message = refusal
                # As the API sends them: `param` null for content it cannot verify, "input" for a missing item.
                param = None if code == "invalid_encrypted_content" else "input"
                self._send_json(400, {"error": {"message": message, "type": "invalid_request_error", "code": code,
                                                "param": param}})
                return
        reply = self.provider.next_reply()
        try:
            self._reply(path, body, reply)
        except _Dropped:
            pass
        except OSError:
            self.close_connection = True  # client went away (e.g. the app was killed)
        finally:
            if reply.reasoning_secret_after is not None:
                self.provider.reasoning_secret = reply.reasoning_secret_after

    def _refused_by_contract(self, path: str, body: Any) -> bool:
        """Answer the real API's 400 for a body the installed SDK's request types reject (wire_contract)."""
        if not self.provider.validate_requests:
            return False
        problem = request_problem(path, body)
        if problem is not None:
            self._send_json(400, problem)
        return problem is not None

    def _lower_headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _control(self, path: str, body: Any) -> None:
        if path == "/_control/script":
            try:
                self.provider.script(*(body or []))
            except (TypeError, ValueError) as exc:  # unknown field or bad value in a reply dict
                self._send_error(400, f"Bad script: {exc}")
                return
            self._send_json(200, {"queued": len(body or [])})
        elif path == "/_control/script-images":
            try:
                self.provider.script_images(*(body or []))
            except (TypeError, ValueError) as exc:
                self._send_error(400, f"Bad script: {exc}")
                return
            self._send_json(200, {"queued": len(body or [])})
        elif path in ("/_control/script-transcriptions", "/_control/script-speech"):
            queue = (self.provider.script_transcriptions if path.endswith("transcriptions")
                     else self.provider.script_speech)
            try:
                queue(*(body or []))
            except (TypeError, ValueError) as exc:
                self._send_error(400, f"Bad script: {exc}")
                return
            self._send_json(200, {"queued": len(body or [])})
        elif path == "/_control/clear":
            self.provider.clear()
            self._send_json(200, {"cleared": True})
        elif path == "/_control/release":
            self.provider.release((body or {}).get("name"))
            self._send_json(200, {"released": True})
        else:
            self._send_error(404, f"Unknown control path {path}")

    def _send_error(self, status: int, message: str, retry_after: str | None = None) -> None:
        kind, code = _ERROR_KINDS.get(status, ("server_error", "server_error"))
        self._send_json(
            status,
            {"error": {"message": message, "type": kind, "code": code, "param": None}},
            headers={"Retry-After": retry_after} if retry_after is not None else None,
        )

    # -- audio (tests/support/scripted_audio.py) ------------------------------
    def _transcription_request(self, headers_at: float) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        fields = scripted_audio.multipart_fields(self.headers.get("content-type") or "", raw)
        params = scripted_audio.transcription_params(fields)
        self.provider.record(RecordedRequest("POST", self.path, self._lower_headers(),
                                             scripted_audio.recorded_form(fields), headers_at, time.monotonic()))
        if self._refused_by_contract("/v1/audio/transcriptions", params):
            return
        answer = self.provider.next_transcription()
        with contextlib.suppress(_Dropped, OSError):
            self._transcription(params, answer)

    def _transcription(self, params: dict[str, Any], answer: ScriptedTranscription) -> None:
        if answer.delay_before_first:
            self.provider.sleep(answer.delay_before_first)
        if answer.status >= 400:
            self._send_error(answer.status, answer.error_message or f"Scripted transcription error {answer.status}")
            return
        if not params.get("stream"):
            self._send_json(200, scripted_audio.transcription_json(answer.text, answer.usage))
            return
        self._start_stream()
        for number, piece in enumerate(answer.pieces()):
            if answer.drop_after_chunks is not None and number >= answer.drop_after_chunks:
                self._drop()
            if number and answer.delay_between_chunks:
                self.provider.sleep(answer.delay_between_chunks)
            self._sse(scripted_audio.transcription_delta(piece))
        self._sse(scripted_audio.transcription_done(answer.text))
        self._end_stream()

    def _speech(self, body: dict[str, Any], answer: ScriptedSpeech) -> None:
        if answer.delay_before_first:
            self.provider.sleep(answer.delay_before_first)
        if answer.status >= 400:
            self._send_error(answer.status, answer.error_message or f"Scripted speech error {answer.status}")
            return
        audio, content_type = scripted_audio.speech_audio(body, answer)
        self.send_response(200)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(audio)))
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex[:16]}")
        self.end_headers()
        self.wfile.write(audio)

    # -- replies -----------------------------------------------------------
    def _image(self, image: ScriptedImage) -> None:
        """The Images API: one image as `b64_json` (GPT image models always answer base64), or an error."""
        if image.hold is not None:
            while not image.hold.wait(0.05):
                if self.provider._stopping.is_set():
                    self._drop()
                if _peer_closed(self.connection):
                    self.provider.note_abandoned()  # the app ended the call (the owner pressed Stop)
                    self._drop()
        if image.status >= 400:
            kind, code = _ERROR_KINDS.get(image.status, ("server_error", "server_error"))
            message = image.error_message or f"Scripted image error {image.status}"
            error = {"message": message, "type": kind, "code": image.error_code or code, "param": None}
            self._send_json(image.status, {"error": error})
            return
        entry: dict[str, Any] = {"b64_json": tiny_png_b64() if image.b64 is None else image.b64}
        if image.revised_prompt is not None:
            entry["revised_prompt"] = image.revised_prompt
        self._send_json(200, {
            "created": int(time.time()), "data": [entry], "output_format": "png", "size": "1024x1024",
            "quality": "medium", "background": "opaque",
            "usage": {"input_tokens": 10, "input_tokens_details": {"image_tokens": 0, "text_tokens": 10},
                      "output_tokens": 100, "total_tokens": 110},
        })

    def _reply(self, path: str, body: dict[str, Any], reply: ScriptedReply) -> None:
        if reply.hold_before_response is not None:
            while not reply.hold_before_response.wait(0.05):
                if self.provider._stopping.is_set():
                    self._drop()
        if reply.delay_before_first:
            self.provider.sleep(reply.delay_before_first)
        if reply.status >= 400:
            try:
                phrase = HTTPStatus(reply.status).phrase
            except ValueError:
                phrase = "Error"
            self._send_error(
                reply.status, reply.error_message or f"Scripted {reply.status} {phrase}", retry_after=reply.retry_after
            )
            return
        stream = bool(body.get("stream"))
        if not stream and reply.drop_after_chunks is not None:
            self._drop()
        turn = _Turn(body, reply, self.provider.reasoning_secret)
        prompt_cache_usage(self.provider.prompt_cache, path, body, turn)
        if path == "/v1/chat/completions":
            if stream:
                self._stream_chat(
                    turn,
                    include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
                )
            else:
                self._send_json(200, turn.chat_completion())
        elif stream:
            self._stream_responses(turn)
        else:
            self._send_json(200, turn.response("completed", turn.response_output()))

    def _pace(self, turn: _Turn) -> None:
        """Called after each content chunk: applies drop / hold / delay rules."""
        turn.sent += 1
        if turn.reply.drop_after_chunks is not None and turn.sent >= turn.reply.drop_after_chunks:
            self._drop()
        if turn.reply.error_after_chunks is not None and turn.sent >= turn.reply.error_after_chunks:
            self._stream_error(turn)
        if turn.sent == turn.reply.hold_after_chunks and turn.reply.hold is not None:
            if turn.reply.holding is not None:
                turn.reply.holding.set()
            while not turn.reply.hold.wait(0.05):
                if self.provider._stopping.is_set():
                    self._drop()
                if _peer_closed(self.connection):
                    # The app ended the call (e.g. the owner pressed Stop).
                    self.provider.note_abandoned()
                    self._drop()
        if turn.reply.delay_between_chunks:
            self.provider.sleep(turn.reply.delay_between_chunks)

    def _stream_error(self, turn: _Turn) -> None:
        """An error in the middle of a stream, the way each API reports one, then the end of the body."""
        message = turn.reply.error_message or "The server had an error while processing your request."
        if turn.chat:
            self._sse({"error": {"message": message, "type": "server_error", "code": turn.reply.error_code,
                                 "param": None}})
        else:
            self._sse({"type": "error", "sequence_number": turn.sent + 10_000, "code": turn.reply.error_code,
                       "message": message, "param": None}, event="error")
        self._end_stream()
        raise _Dropped

    def _stream_chat(self, turn: _Turn, include_usage: bool) -> None:
        self._start_stream()
        if turn.reply.drop_after_chunks == 0:
            self._drop()
        self._sse(turn.chunk({"role": "assistant", "content": "", "refusal": None}))
        for piece in _pieces(turn.reply.preamble):
            self._sse(turn.chunk({"content": piece}))
        for index, call in enumerate(turn.calls):
            head = {
                "index": index,
                "id": call["call_id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": ""},
            }
            self._sse(turn.chunk({"tool_calls": [head]}))
            for piece in _halves(call["arguments_json"]):
                self._sse(turn.chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
                self._pace(turn)
        for piece in turn.chunks:
            self._sse(turn.chunk({"content": piece}))
            self._pace(turn)
        for piece in _pieces(turn.reply.refusal):
            self._sse(turn.chunk({"refusal": piece}))
            self._pace(turn)
        if not turn.reply.finish:
            self._end_stream()
            return
        self._sse(turn.chunk({}, finish_reason=_chat_finish_reason(turn)))
        if include_usage:
            self._sse({**turn.chunk_base(), "choices": [], "usage": turn.chat_usage()})
        self._sse("[DONE]")
        self._end_stream()

    def _stream_responses(self, turn: _Turn) -> None:
        seq = iter(range(1_000_000))

        def emit(kind: str, **fields: Any) -> None:
            self._sse({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

        self._start_stream()
        if turn.reply.drop_after_chunks == 0:
            self._drop()
        emit("response.created", response=turn.response("in_progress", []))
        emit("response.in_progress", response=turn.response("in_progress", []))
        output: list[dict[str, Any]] = []
        for number, summary in enumerate(turn.reply.reasoning):
            idx, item = len(output), turn.reasoning_item(number, summary, "in_progress")
            emit("response.output_item.added", output_index=idx, item={**item, "summary": [], "encrypted_content": None})
            if summary and turn.summaries:
                loc = {"item_id": item["id"], "output_index": idx, "summary_index": 0}
                emit("response.reasoning_summary_part.added", **loc, part={"type": "summary_text", "text": ""})
                for piece in _halves(summary):
                    emit("response.reasoning_summary_text.delta", **loc, delta=piece)
                emit("response.reasoning_summary_text.done", **loc, text=summary)
                emit("response.reasoning_summary_part.done", **loc, part={"type": "summary_text", "text": summary})
            done = turn.reasoning_item(number, summary, "completed")
            emit("response.output_item.done", output_index=idx, item=done)
            output.append(done)
        for number, image in enumerate(turn.reply.image_calls()):
            idx, item_id = len(output), f"ig_{turn.id}_{number}"
            loc = {"item_id": item_id, "output_index": idx}
            emit("response.output_item.added", output_index=idx, item=turn.image_item(item_id, image, "in_progress"))
            emit("response.image_generation_call.in_progress", **loc)
            emit("response.image_generation_call.generating", **loc)
            if image.error is None:
                for index in range(min(image.partials, 3)):
                    emit("response.image_generation_call.partial_image", **loc, partial_image_index=index,
                         partial_image_b64=tiny_png_b64(PARTIAL_COLOURS[index]), size="1024x1024",
                         output_format="png", quality="medium", background="opaque")
                    self._pace(turn)
                emit("response.image_generation_call.completed", **loc)
            done = turn.image_item(item_id, image, "failed" if image.error else "completed")
            emit("response.output_item.done", output_index=idx, item=done)
            output.append(done)
        for search in turn.reply.web_searches:
            self._web_search_item(emit, turn, output, search)
        if turn.reply.preamble:
            self._message_item(emit, turn, output, _pieces(turn.reply.preamble), None, "commentary")
        for call in turn.calls:
            idx, item = len(output), turn.function_item(call, "in_progress", "")
            emit("response.output_item.added", output_index=idx, item=item)
            for piece in _halves(call["arguments_json"]):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=idx,
                    delta=piece,
                )
                self._pace(turn)
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=idx,
                name=call["name"],
                arguments=call["arguments_json"],
            )
            done = turn.function_item(call, "completed", call["arguments_json"])
            emit("response.output_item.done", output_index=idx, item=done)
            output.append(done)
        if turn.chunks or turn.reply.refusal:
            self._message_item(emit, turn, output, turn.chunks, turn.reply.refusal, turn.reply.phase)
        if turn.reply.finish and turn.reply.incomplete:
            emit("response.incomplete", response=_incomplete(turn.response("incomplete", output), turn.reply.incomplete))
        elif turn.reply.finish:
            emit("response.completed", response=turn.response("completed", output))
        self._end_stream()

    def _web_search_item(self, emit: Any, turn: _Turn, output: list[dict[str, Any]], search: dict[str, Any]) -> None:
        """A built-in `web_search_call` output item: in progress, searching, completed; its `action.sources`
        only when the request asked for them (`include`)."""
        idx, item_id = len(output), f"ws_{uuid.uuid4().hex[:24]}"
        action: dict[str, Any] = {"type": "search", "query": search["query"]}
        emit("response.output_item.added", output_index=idx,
             item={"type": "web_search_call", "id": item_id, "status": "in_progress", "action": action})
        for stage in ("in_progress", "searching", "completed"):
            emit(f"response.web_search_call.{stage}", output_index=idx, item_id=item_id)
        if turn.web_search_sources:
            action = {**action, "sources": [{"type": "url", "url": url} for url in search.get("sources", [])]}
        done = {"type": "web_search_call", "id": item_id, "status": "completed", "action": action}
        emit("response.output_item.done", output_index=idx, item=done)
        output.append(done)

    def _message_item(
        self, emit: Any, turn: _Turn, output: list[dict[str, Any]], chunks: list[str], refusal: str | None,
        phase: str | None,
    ) -> None:
        """One assistant `message` output item: an `output_text` part streamed in `chunks` (if any), then a
        `refusal` part (if any); with its `phase`, `incomplete` when the reply is cut off."""
        idx, msg_id = len(output), f"msg_{uuid.uuid4().hex[:24]}"
        emit("response.output_item.added", output_index=idx, item=turn.message_item(msg_id, "in_progress", None, phase))
        parts: list[dict[str, Any]] = []
        if chunks:
            text = "".join(chunks)
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            loc = {"item_id": msg_id, "output_index": idx, "content_index": len(parts)}
            emit("response.content_part.added", **loc, part=part)
            for piece in chunks:
                emit("response.output_text.delta", **loc, delta=piece, logprobs=[])
                self._pace(turn)
            annotations = turn.annotations if chunks is turn.chunks else []
            for index, annotation in enumerate(annotations):
                emit("response.output_text.annotation.added", **loc, annotation_index=index, annotation=annotation)
            emit("response.output_text.done", **loc, text=text, logprobs=[])
            done_part = {**part, "text": text, "annotations": annotations}
            emit("response.content_part.done", **loc, part=done_part)
            parts.append(done_part)
        if refusal:
            loc = {"item_id": msg_id, "output_index": idx, "content_index": len(parts)}
            emit("response.content_part.added", **loc, part={"type": "refusal", "refusal": ""})
            for piece in _pieces(refusal):
                emit("response.refusal.delta", **loc, delta=piece)
                self._pace(turn)
            emit("response.refusal.done", **loc, refusal=refusal)
            emit("response.content_part.done", **loc, part={"type": "refusal", "refusal": refusal})
            parts.append({"type": "refusal", "refusal": refusal})
        status = "incomplete" if turn.reply.incomplete and phase != "commentary" else "completed"
        done = {**turn.message_item(msg_id, status, None, phase), "content": parts}
        emit("response.output_item.done", output_index=idx, item=done)
        output.append(done)


def _pieces(text: str | None) -> list[str]:
    """Word-sized pieces of `text` ("".join gives it back); none for no text."""
    return (re.findall(r"\s*\S+\s*$|\s*\S+", text) or [text]) if text else []


def _chat_finish_reason(turn: _Turn) -> str:
    """`length` / `content_filter` for a reply cut off (Chat Completions' names), else the usual ones."""
    reason = turn.reply.incomplete
    if reason:
        return "length" if reason == "max_output_tokens" else reason
    return "tool_calls" if turn.calls else "stop"


def _incomplete(response: dict[str, Any], reason: str) -> dict[str, Any]:
    """A Responses `response` object cut off for `reason` (its usage as far as it got)."""
    return {**response, "incomplete_details": {"reason": reason}, "usage": response.get("usage") or {
        "input_tokens": 1, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2,
    }}


# -- the provider's prompt cache, simulated ------------------------------------------------------------
#
# OpenAI caches the prefix of a prompt (tools, then the messages or input items, in order) automatically:
# a request is served from the cache up to its first token that differs from a recent request routed to
# the same machine (the `prompt_cache_key` joins the routing), from 1,024 tokens on and in blocks of 128
# tokens ("Prompt caching 201", developers.openai.com/cookbook/examples/prompt_caching_201). Here a token
# is four characters of the request's JSON, and "recent" is the last `PromptCache.RECENT` requests per key.

CACHE_MIN_TOKENS = 1_024
CACHE_BLOCK_TOKENS = 128
CHARACTERS_PER_TOKEN = 4


class PromptCache:
    """The prompts recently seen under each `prompt_cache_key` (None: requests without one)."""

    RECENT = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._recent: dict[str | None, deque[str]] = {}

    def clear(self) -> None:
        with self._lock:
            self._recent.clear()

    def serve(self, key: str | None, prompt: str) -> int:
        """The tokens of `prompt` served from the cache, and `prompt` remembered for the requests after it."""
        with self._lock:
            recent = self._recent.setdefault(key, deque(maxlen=self.RECENT))
            served = max((cached_prefix_tokens(prompt, seen) for seen in recent), default=0)
            recent.append(prompt)
        return served


def prompt_text(path: str, body: dict[str, Any]) -> str:
    """The prompt as the cache sees it, in the order the model reads it: tools, then instructions and
    input (Responses) or the messages (Chat Completions), each as sent."""
    pieces = [json.dumps(body.get("tools") or [])]
    if path == "/v1/responses":
        pieces.append(json.dumps(body.get("instructions")))
        items = body.get("input")
        pieces += [json.dumps(item) for item in items] if isinstance(items, list) else [json.dumps(items)]
    else:
        messages = body.get("messages")
        pieces += [json.dumps(m) for m in messages] if isinstance(messages, list) else [json.dumps(messages)]
    return "".join(pieces)


def prompt_tokens(prompt: str) -> int:
    return -(-len(prompt) // CHARACTERS_PER_TOKEN)


def cached_prefix_tokens(prompt: str, seen: str) -> int:
    """The tokens a cache holding `seen` serves of `prompt`: their common prefix, in whole 128-token blocks
    from 1,024 tokens on (0 below), and never the whole prompt's last partial token."""
    limit = min(len(prompt), len(seen))
    low, high = 0, limit  # the longest common prefix, in characters (binary search over slices: fast in C)
    while low < high:
        middle = (low + high + 1) // 2
        if prompt[:middle] == seen[:middle]:
            low = middle
        else:
            high = middle - 1
    common = low // CHARACTERS_PER_TOKEN
    return common // CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS if common >= CACHE_MIN_TOKENS else 0


def prompt_cache_usage(cache: PromptCache, path: str, body: dict[str, Any], turn: _Turn) -> None:
    """The reply's input usage from the simulated cache, unless its script set it: `input_tokens` the
    prompt's tokens, `cached_tokens` the part a recent request with the same key already had."""
    prompt = prompt_text(path, body)
    key = body.get("prompt_cache_key")
    served = cache.serve(key if isinstance(key, str) else None, prompt)
    scripted = turn.reply.usage or {}
    if "input_tokens" not in scripted:
        turn.input_tokens = prompt_tokens(prompt)
    if "cached_tokens" not in scripted and (served or path == "/v1/responses"):
        turn.cached_tokens = min(served, turn.input_tokens)


def _seal(item_id: str, secret: str) -> str:
    """The opaque encrypted content of a reasoning item: only this provider, with this secret, accepts it."""
    return "enc_" + hmac.new(secret.encode(), item_id.encode(), hashlib.sha256).hexdigest() + "." + "x" * 64


def _responses_input_refusal(body: dict[str, Any], secret: str) -> tuple[str, str] | None:
    """What the real Responses API refuses in `input`, as (code, message), or None.

    A `function_call_output` whose call is not earlier in the input; a reasoning item whose
    encrypted content this provider did not issue (another key or model) or that has none
    (with `store: false` nothing can be looked up by id).
    """
    items = body.get("input") if isinstance(body.get("input"), list) else []
    calls: set[str] = set()
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call":
            calls.add(str(item.get("call_id")))
        elif kind == "function_call_output" and str(item.get("call_id")) not in calls:
            return "invalid_request", f"No tool call found for function call output with call_id {item.get('call_id')}."
        elif kind == "reasoning":
            item_id, sealed = str(item.get("id")), item.get("encrypted_content")
            if not sealed:
                return "invalid_request", f"Item with id '{item_id}' not found. Items are not persisted when `store` is false."
            if not hmac.compare_digest(str(sealed), _seal(item_id, secret)):
                # The API's words: the content abbreviated (its first and last four characters), not the id.
                shown = f"{str(sealed)[:4]}...{str(sealed)[-4:]}"
                return "invalid_encrypted_content", f"The encrypted content {shown} could not be verified."
    return None


def _halves(text: str) -> list[str]:
    """Split tool-call arguments into two deltas so clients must concatenate."""
    mid = len(text) // 2
    return [p for p in (text[:mid], text[mid:]) if p]


class _Turn:
    """Builds the JSON objects for one reply, with field sets taken from the SDK's types."""

    def __init__(self, body: dict[str, Any], reply: ScriptedReply, reasoning_secret: str = "") -> None:
        self.reply = reply
        self.model = str(body.get("model") or "scripted-model")
        self.chunks = reply.text_chunks()
        self.text = "".join(self.chunks)
        self.created = int(time.time())
        self.id = uuid.uuid4().hex[:24]
        self.sent = 0
        self.calls = [
            {
                "name": c["name"],
                "call_id": c.get("call_id") or f"call_{uuid.uuid4().hex[:20]}",
                "arguments_json": json.dumps(c.get("arguments") or {}),
            }
            for c in reply.tool_calls
        ]
        usage = reply.usage or {}
        words = len(json.dumps(body.get("messages") or body.get("input") or "").split())
        self.input_tokens = int(usage.get("input_tokens", words))
        self.output_tokens = int(usage.get("output_tokens", len(self.chunks) + 4 * len(self.calls)))
        # Chat Completions servers often report no details at all; the Responses API always does (0 by default).
        self.cached_tokens = usage.get("cached_tokens")
        self.reasoning_tokens = usage.get("reasoning_tokens")
        # What the request asked for: reasoning summaries, and encrypted reasoning (with the provider's secret).
        self.summaries = bool((body.get("reasoning") or {}).get("summary")) if isinstance(body.get("reasoning"), dict) else False
        include = body.get("include") if isinstance(body.get("include"), list) else []
        self.reasoning_secret = reasoning_secret if "reasoning.encrypted_content" in include else None
        self.web_search_sources = "web_search_call.action.sources" in include
        self.chat = "messages" in body
        self.annotations = [
            {"type": "url_citation", "url": c["url"], "title": c.get("title", ""),
             "start_index": c.get("start", 0), "end_index": c.get("end", 0)}
            for c in reply.citations
        ]

    # Chat Completions -------------------------------------------------------
    def chunk_base(self) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{self.id}",
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_scripted",
            "service_tier": "default",
        }

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {
            "index": 0,
            "delta": delta,
            "logprobs": None,
            "finish_reason": finish_reason,
        }
        return {**self.chunk_base(), "choices": [choice], "usage": None}

    def chat_usage(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
            **({"prompt_tokens_details": {"cached_tokens": self.cached_tokens}} if self.cached_tokens is not None else {}),
            **(
                {"completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens}}
                if self.reasoning_tokens is not None
                else {}
            ),
        }

    def chat_completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.text or None,
            "refusal": None,
        }
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": c["call_id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments_json"]},
                }
                for c in self.calls
            ]
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": "tool_calls" if self.calls else "stop",
        }
        return {
            "id": f"chatcmpl-{self.id}",
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": self.chat_usage(),
            "system_fingerprint": "fp_scripted",
            "service_tier": "default",
        }

    # Responses ------------------------------------------------------------------
    def function_item(self, call: dict[str, str], status: str, arguments: str) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": f"fc_{call['call_id']}",
            "call_id": call["call_id"],
            "name": call["name"],
            "arguments": arguments,
            "status": status,
        }

    def image_item(self, item_id: str, image: ScriptedImageCall, status: str) -> dict[str, Any]:
        item: dict[str, Any] = {"type": "image_generation_call", "id": item_id, "status": status, "result": None}
        if status == "completed":
            item.update(result=tiny_png_b64() if image.b64 is None else image.b64, revised_prompt=image.revised_prompt,
                        output_format="png", size="1024x1024", quality="medium", background="opaque")
        elif status == "failed" and image.error is not None:
            item["error"] = {"type": "image_generation_error", "code": image.error.get("code"),
                             "message": image.error.get("message", "The image could not be generated."), "param": None}
        return item

    def reasoning_item(self, number: int, summary: str, status: str) -> dict[str, Any]:
        item_id = f"rs_{self.id}_{number}"
        return {
            "type": "reasoning",
            "id": item_id,
            "summary": [{"type": "summary_text", "text": summary}] if summary and self.summaries else [],
            "encrypted_content": _seal(item_id, self.reasoning_secret) if self.reasoning_secret else None,
            "status": status,
        }

    def message_item(self, msg_id: str, status: str, text: str | None, phase: str | None = None) -> dict[str, Any]:
        content = [] if text is None else [
            {"type": "output_text", "text": text, "annotations": self.annotations, "logprobs": []}
        ]
        item = {
            "type": "message",
            "id": msg_id,
            "role": "assistant",
            "status": status,
            "content": content,
        }
        return {**item, "phase": phase} if phase else item

    def response_output(self) -> list[dict[str, Any]]:
        items = [self.reasoning_item(n, summary, "completed") for n, summary in enumerate(self.reply.reasoning)]
        items += [self.function_item(c, "completed", c["arguments_json"]) for c in self.calls]
        if self.chunks:
            items.append(self.message_item(f"msg_{self.id}", "completed", self.text))
        return items

    def response(self, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        done = status == "completed"
        usage = {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens or 0, "cache_write_tokens": 0},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens or 0},
            "total_tokens": self.input_tokens + self.output_tokens,
        }
        return {
            "id": f"resp_{self.id}",
            "object": "response",
            "created_at": self.created,
            "status": status,
            "completed_at": time.time() if done else None,
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "temperature": 1.0,
            "top_p": 1.0,
            "tool_choice": "auto",
            "tools": [],
            "text": {"format": {"type": "text"}},
            "truncation": "disabled",
            "usage": usage if done else None,
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible provider")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    # Checking a request against the SDK's types takes about 65 ms per 1,000 input items (wire_contract):
    # a bench timing the provider's first byte on very long threads may leave it out.
    parser.add_argument("--no-validate", action="store_true", help="do not check requests against the SDK's types")
    args = parser.parse_args(argv)
    provider = ScriptedProvider(args.host, args.port)
    provider.validate_requests = not args.no_validate
    provider.start()
    stop = threading.Event()
    # Signal handlers only set a flag; the main thread then shuts down in order.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"BASE_URL {provider.base_url}", flush=True)
    while not stop.wait(0.5):
        pass
    provider.stop()


if __name__ == "__main__":
    main()
