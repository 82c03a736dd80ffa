"""Only the hosts the owner serves on: the defence against DNS rebinding.

A page on a rebinding domain (`evil.example` resolving to 127.0.0.1) reaches
the app with `Host: evil.example` and an Origin of the same site, so an
Origin-equals-Host check passes it. The Host itself decides instead: without
protection only loopback names (`localhost`, `127.0.0.1`, `[::1]`, any port,
any 127/8 address) are served; with protection, those and the names listed
in `ELION_ALLOWED_HOSTS`. Anything else gets 400 on HTTP (the JSON error
shape under /api/) and a refused WebSocket handshake, before Django or
Channels run. A request with no Host header (not a browser) is left to the
other checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from elion.base.access import is_loopback_host

HOST_REFUSED = "This host name is not one Elion serves (set ELION_ALLOWED_HOSTS with owner protection on)."


def served_host_names() -> list[str]:
    """Django's ALLOWED_HOSTS (the loopback names, and `testserver` in the test environment), with the
    names of ELION_ALLOWED_HOSTS only while protection is on."""
    listed = set(settings.ELION_ALLOWED_HOSTS)
    names = [name for name in settings.ALLOWED_HOSTS if name not in listed]
    return names + list(settings.ELION_ALLOWED_HOSTS) if settings.ELION_PROTECTED else names


def host_is_served(host_header: str) -> bool:
    """May a request naming `host_header` (as sent: name or address, maybe a port) be served?"""
    domain, _port = split_domain_port(host_header.strip().lower())
    if not domain:
        return False
    return is_loopback_host(domain) or validate_host(domain, served_host_names())


def _host_header(scope: dict) -> str | None:
    for name, value in scope.get("headers") or ():
        if name == b"host":
            return value.decode("latin-1")
    return None


class HostGuard:
    """ASGI wrapper: refuse HTTP requests and WebSocket handshakes for a host the owner does not serve."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] in ("http", "websocket"):
            host = _host_header(scope)
            if host is not None and not host_is_served(host):
                return await self._refuse(scope, send)
        return await self.app(scope, receive, send)

    async def _refuse(self, scope: dict, send: Callable) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4400})
            return
        if scope.get("path", "").startswith("/api/"):
            body = json.dumps({"error": "host_not_allowed", "detail": HOST_REFUSED}).encode()
            content_type = b"application/json"
        else:
            body, content_type = HOST_REFUSED.encode(), b"text/plain; charset=utf-8"
        await send({"type": "http.response.start", "status": 400, "headers": [(b"content-type", content_type)]})
        await send({"type": "http.response.body", "body": body})
