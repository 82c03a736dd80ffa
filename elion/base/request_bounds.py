"""What a request may send before anything reads its body: a size per route, and credentials.

Decided from the request line and headers alone, so the server can refuse a
body it has not read (`elion.web.daphne_bounds` in Daphne's HTTP parser,
`elion.web.body_guard` in front of Django's handler):

- a body larger than its route's limit (`body_limit`) is a 413
  `request_too_large`, by its `Content-Length`, or once a chunked body
  passes the limit;
- with protection on, a body sent to a route that needs the owner without
  any credential (no `Authorization: Bearer` matching the API token, no
  session cookie) is a 401 `authentication_required` under /api/ and a
  redirect to the login page elsewhere. A session cookie is only looked at
  here, not verified (that needs the database): Django verifies it as
  before, and the body it reads is bounded by the route's limit.
A request without a body is never refused here.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from django.conf import settings
from django.urls import Resolver404, resolve

from elion.base.access import PUBLIC_PATHS

# Room for the multipart boundaries, part headers and small fields beside a file.
MULTIPART_OVERHEAD = 64 * 1024
# A body to any route not listed below: JSON bodies (Django refuses more than
# DATA_UPLOAD_MAX_MEMORY_SIZE of them) and the 4 MiB memory import.
DEFAULT_BODY_BYTES = 5 * 1024 * 1024


def _route_limits() -> dict[str, int]:
    """The routes that take files, by URL name, and the most bytes each may be sent."""
    attachment = settings.ELION_ATTACHMENT_MAX_BYTES + MULTIPART_OVERHEAD
    document = settings.ELION_ARCHIVE_MAX_FILE_BYTES + MULTIPART_OVERHEAD
    export = settings.ELION_ARCHIVE_IMPORT_MAX_BYTES + MULTIPART_OVERHEAD
    return {
        "api-attachments": attachment,
        "api-transcriptions": settings.ELION_VOICE_MAX_BYTES + MULTIPART_OVERHEAD,
        "api-archive-documents": document,
        "api-library-files": document,
        "library": document,
        "api-archive-import-chatgpt": export,
        "api-archive-import-claude": export,
        "archive": export,
        "api-archive-upload": settings.ELION_UPLOAD_PIECE_BYTES + MULTIPART_OVERHEAD,
    }


def body_limit(path: str) -> int:
    """The most bytes a request body to `path` may have."""
    try:
        name = resolve(path).url_name
    except Resolver404:
        return DEFAULT_BODY_BYTES
    return max(_route_limits().get(name or "", DEFAULT_BODY_BYTES), DEFAULT_BODY_BYTES)


@dataclass(frozen=True)
class Refusal:
    status: int
    reason: str
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes


def _json_refusal(status: int, reason: str, code: str, detail: str) -> Refusal:
    body = json.dumps({"error": code, "detail": detail}).encode()
    return Refusal(status, reason, ((b"content-type", b"application/json"),), body)


def too_large(path: str, limit: int) -> Refusal:
    detail = f"The request body is larger than this route accepts ({limit} bytes)."
    if path.startswith("/api/"):
        return _json_refusal(413, "Payload Too Large", "request_too_large", detail)
    return Refusal(413, "Payload Too Large", ((b"content-type", b"text/plain; charset=utf-8"),), detail.encode())


def unauthenticated(path: str) -> Refusal:
    if path.startswith("/api/"):
        return _json_refusal(401, "Unauthorized", "authentication_required",
                             "Log in as the owner or send the API token.")
    location = f"{settings.LOGIN_URL}?next={quote(path)}".encode()
    return Refusal(303, "See Other", ((b"location", location),), b"")


def credentials_present(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """The API token (verified) or a session cookie (present, verified later by Django)."""
    cookie_name = settings.SESSION_COOKIE_NAME.encode()
    token = settings.ELION_API_TOKEN
    for name, value in headers:
        name = name.lower()
        if name == b"authorization" and token and value.startswith(b"Bearer "):
            if hmac.compare_digest(value[len(b"Bearer "):].strip(), token.encode()):
                return True
        elif name == b"cookie":
            for pair in value.split(b";"):
                key, _, cookie_value = pair.strip().partition(b"=")
                if key == cookie_name and cookie_value:
                    return True
    return False


def needs_owner(path: str) -> bool:
    return settings.ELION_PROTECTED and not path.startswith(PUBLIC_PATHS)


def early_refusal(path: str, headers: Iterable[tuple[bytes, bytes]], content_length: int | None,
                  chunked: bool) -> Refusal | None:
    """The answer for a request that must not have its body read, or None to read it."""
    if not chunked and not content_length:
        return None
    headers = list(headers)
    if needs_owner(path) and not credentials_present(headers):
        return unauthenticated(path)
    limit = body_limit(path)
    if content_length is not None and content_length > limit:
        return too_large(path, limit)
    return None


def http_response_bytes(refusal: Refusal) -> bytes:
    """The refusal as a whole HTTP/1.1 response that closes the connection."""
    lines = [f"HTTP/1.1 {refusal.status} {refusal.reason}".encode()]
    lines += [name + b": " + value for name, value in refusal.headers]
    lines += [b"Content-Length: " + str(len(refusal.body)).encode(), b"Connection: close", b"", b""]
    return b"\r\n".join(lines) + refusal.body
