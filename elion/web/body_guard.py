"""ASGI layer in front of Django's handler: a body is refused before the application reads it.

Django's `ASGIHandler` reads the whole body (into a SpooledTemporaryFile)
before any middleware or view runs. This layer applies `elion.base.request_bounds`
first, from the scope's headers: over the route's limit by `Content-Length`,
or without any credential on a route that needs the owner, or a large one
whose only credential is a session cookie that is not the owner's live
session (`request_bounds.session_refusal`), the answer goes out and the body
is never read. A body without `Content-Length` (chunked) is
counted as it is received and cut off once it passes the limit: the 413
goes out, and Django sees a disconnect (it stops, writes nothing).

Under Daphne the same rules already ran in its HTTP parser
(`elion.web.daphne_bounds`), before the body arrived; this layer covers any other
ASGI server and the in-process test client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async

from elion.base.request_bounds import Refusal, body_limit, early_refusal, session_refusal, session_to_check, too_large

Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


def _content_length(headers: list[tuple[bytes, bytes]]) -> tuple[int | None, bool]:
    """(declared length, chunked) from the request headers."""
    length, chunked = None, False
    for name, value in headers:
        name = name.lower()
        if name == b"content-length" and value.strip().isdigit():
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    return length, chunked and length is None


async def _answer(send: Send, refusal: Refusal) -> None:
    headers = [*refusal.headers, (b"content-length", str(len(refusal.body)).encode())]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": refusal.body})


class BodyGuard:
    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = list(scope.get("headers") or ())
        length, chunked = _content_length(headers)
        path = scope.get("path", "")
        refusal = early_refusal(path, headers, length, chunked)
        if refusal is None and (session_key := session_to_check(path, headers, length, chunked)) is not None:
            # A large body with a session cookie alone: read only once the session is the owner's.
            refusal = await sync_to_async(session_refusal, thread_sensitive=False)(path, session_key)
        if refusal is not None:
            return await _answer(send, refusal)
        if not chunked:
            return await self.app(scope, receive, send)
        return await self.app(scope, self._counted(receive, send, path), send)

    def _counted(self, receive: Receive, send: Send, path: str) -> Receive:
        limit = body_limit(path)
        received = 0

        async def counted_receive() -> dict:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    await _answer(send, too_large(path, limit))
                    return {"type": "http.disconnect"}
            return message

        return counted_receive
