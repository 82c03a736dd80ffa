"""DNS rebinding: only the hosts the owner serves, on HTTP and WebSocket (issue "Hardening", item Hosts).

Real ASGI round trips through `elion.asgi.application` (Channels' test
communicators): a page on a rebinding domain sends `Host: evil.example` with
an Origin of the same site, which an Origin-equals-Host check lets through.
"""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator, WebsocketCommunicator

from elion.asgi import application
from elion.web.host_guard import host_is_served
from tests.support.factories import thread

pytestmark = pytest.mark.django_db(transaction=True)

REBINDING = [(b"host", b"evil.example:8000"), (b"origin", b"http://evil.example:8000")]


async def http(method: str, path: str, headers: list, body: dict | None = None) -> tuple[int, bytes]:
    payload = json.dumps(body).encode() if body is not None else b""
    extra = [(b"content-type", b"application/json")] if body is not None else []
    communicator = HttpCommunicator(application, method, path, body=payload, headers=headers + extra)
    response = await communicator.get_response(timeout=10)
    return response["status"], response["body"]


@pytest.mark.asyncio
async def test_dns_rebinding_a_foreign_host_is_refused_on_http_without_protection():
    status, body = await http("PATCH", "/api/settings/", REBINDING, {"custom_instructions": "pwned"})
    assert status == 400
    assert json.loads(body)["error"] == "host_not_allowed"
    status, _ = await http("GET", "/", REBINDING)
    assert status == 400
    from asgiref.sync import sync_to_async

    from elion.base.assistant_settings import assistant_settings_get

    assert (await sync_to_async(assistant_settings_get)()).custom_instructions != "pwned"  # nothing written


@pytest.mark.parametrize("host", [b"127.0.0.1:8000", b"localhost:8000", b"[::1]:8000", b"127.0.0.1"])
@pytest.mark.asyncio
async def test_dns_rebinding_loopback_hosts_are_served(host):
    status, body = await http("GET", "/api/settings/", [(b"host", host)])
    assert status == 200, body[:200]


@pytest.mark.asyncio
async def test_dns_rebinding_a_foreign_host_cannot_open_the_websocket():
    conversation = await _conversation()
    communicator = WebsocketCommunicator(application, f"/ws/conversations/{conversation.id}/", headers=REBINDING)
    connected, _ = await communicator.connect(timeout=5)
    assert not connected
    same_host = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation.id}/",
        headers=[(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")],
    )
    connected, _ = await same_host.connect(timeout=5)
    assert connected
    await same_host.disconnect()


@pytest.mark.asyncio
async def test_dns_rebinding_with_protection_only_listed_hosts_are_served(settings):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_PROTECTED = True
    settings.ELION_ALLOWED_HOSTS = ["chat.example.org"]
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "chat.example.org"]  # as elion.settings derives it
    status, _ = await http("GET", "/api/settings/", [(b"host", b"chat.example.org")])
    assert status == 401  # served: the owner must log in
    status, body = await http("GET", "/api/settings/", [(b"host", b"evil.example")])
    assert status == 400 and json.loads(body)["error"] == "host_not_allowed"


def test_host_is_served_reads_names_ports_and_addresses(settings):
    for served in ("localhost", "LOCALHOST:80", "127.0.0.1", "127.0.0.2:9", "[::1]", "[::1]:8000"):
        assert host_is_served(served), served
    for refused in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "", "[::2]", "0.0.0.0"):
        assert not host_is_served(refused), refused
    settings.ELION_ALLOWED_HOSTS = [".example.org"]
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, ".example.org"]
    assert not host_is_served("chat.example.org")  # listed names count only with protection on
    settings.ELION_PROTECTED = True
    assert host_is_served("chat.example.org") and not host_is_served("example.com")


async def _conversation():
    from asgiref.sync import sync_to_async

    return await sync_to_async(thread)()
