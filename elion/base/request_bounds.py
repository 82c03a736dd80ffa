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
  redirect to the login page elsewhere. A session cookie is looked at here;
  for a body over `SESSION_CHECK_BYTES` sent with it alone, the session is
  verified too (`session_refusal`, in a worker thread: it reads the
  database) before any more of the body is read.
A request without a body is never refused here.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from django.conf import settings
from django.db import connection
from django.urls import Resolver404, resolve

from elion.base.access import PUBLIC_PATHS, owner_session_key_valid

logger = logging.getLogger(__name__)

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


def _credentials(headers: Iterable[tuple[bytes, bytes]]) -> tuple[bool, str | None]:
    """Whether the request carries the API token (verified here), and its session cookie's value (present,
    verified later by Django; the last one sent) or None."""
    cookie_name = settings.SESSION_COOKIE_NAME.encode()
    token = settings.ELION_API_TOKEN
    token_valid, session = False, None
    for name, value in headers:
        name = name.lower()
        if name == b"authorization" and token and value.startswith(b"Bearer "):
            token_valid = token_valid or hmac.compare_digest(value[len(b"Bearer "):].strip(), token.encode())
        elif name == b"cookie":
            for pair in value.split(b";"):
                key, _, cookie_value = pair.strip().partition(b"=")
                if key == cookie_name and cookie_value:
                    session = cookie_value.decode("latin-1")
    return token_valid, session


def credentials_present(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """The API token (verified) or a session cookie (present, verified later by Django)."""
    token_valid, session = _credentials(headers)
    return token_valid or session is not None


# A body larger than this, sent with a session cookie and no API token, is read only once the session is
# known to be the owner's (issue 41, item 15): any `sessionid` value made the server read up to the route's
# limit (1 GiB for an export) before Django's 401. Smaller bodies cost less than the check (a thread and two
# reads), so a send's JSON pays nothing for it.
SESSION_CHECK_BYTES = 1024 * 1024


def session_cookie_only(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The session cookie's value when it is the request's only credential (no API token), else None."""
    token_valid, session = _credentials(headers)
    return None if token_valid else session


def session_to_check(path: str, headers: Iterable[tuple[bytes, bytes]], content_length: int | None,
                     chunked: bool) -> str | None:
    """The session key to verify before reading this request's body (a large body, a session cookie as its
    only credential, a route that needs the owner), or None when nothing needs checking."""
    large = chunked or (content_length is not None and content_length > SESSION_CHECK_BYTES)
    if not large or not needs_owner(path):
        return None
    return session_cookie_only(headers)


def session_refusal(path: str, session_key: str) -> Refusal | None:
    """The refusal for a body whose only credential is `session_key` when that is not a live owner
    session; None when it is, or when the database cannot tell now (Django then answers as before)."""
    try:
        valid = owner_session_key_valid(session_key)
    except Exception:  # noqa: BLE001 - an outage: Django's own check answers it (503), the body bounded as before
        logger.warning("could not check a session before reading a body to %s", path, exc_info=True)
        return None
    finally:
        connection.close()  # a worker thread's connection (a pooled one goes back)
    return None if valid else unauthenticated(path)


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
