"""Without owner password protection the app serves loopback only.

The `serve`/`check_bind` commands refuse a non-loopback bind at startup; this
ASGI wrapper is the second line: whatever server runs the app, a connection
that arrived on a non-loopback address is refused while protection is off.
"""

from __future__ import annotations

from collections.abc import Callable

from asgiref.typing import ASGIApplication as ASGIApp
from django.conf import settings

from elion.base.access import is_loopback_host

REFUSAL = b"Elion serves loopback only until ELION_OWNER_PASSWORD is set."


class LoopbackGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] in ("http", "websocket") and not settings.ELION_PROTECTED:
            server = scope.get("server")
            if server and server[0] and not is_loopback_host(str(server[0])):
                return await self._refuse(scope, send)
        return await self.app(scope, receive, send)

    async def _refuse(self, scope: dict, send: Callable) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403})
            return
        await send({"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": REFUSAL})
