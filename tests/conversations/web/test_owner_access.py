"""Owner access: password protection, bearer token, CSRF, loopback-only without a password."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def protected(settings):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True
    return settings


def test_with_protection_every_api_path_but_health_needs_the_owner(protected):
    client = Client()
    for path in ("/api/conversations/", "/api/settings/", "/api/folders/", "/api/schema/"):
        response = client.get(path)
        assert response.status_code == 401, path
        assert response.json()["error"] == "authentication_required"
    health = client.get("/api/health/")
    assert health.status_code == 200 and health.json()["status"] == "ok"


def test_with_protection_pages_redirect_to_login(protected):
    client = Client()
    for path in ("/", "/settings/", "/admin/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), path
    assert client.get("/login/").status_code == 200


def test_bearer_token_opens_the_api_for_scripts(protected):
    client = Client(HTTP_AUTHORIZATION="Bearer script-token")
    assert client.get("/api/conversations/").status_code == 200
    response = client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201
    wrong = Client(HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.get("/api/conversations/").status_code == 401


def test_login_with_the_owner_password_starts_a_session(protected):
    client = Client()
    bad = client.post("/api/auth/login/", {"password": "wrong"}, content_type="application/json")
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_credentials"
    good = client.post("/api/auth/login/", {"password": "correct horse"}, content_type="application/json")
    assert good.status_code == 200
    assert client.get("/api/conversations/").status_code == 200


def test_login_page_form_logs_in(protected):
    client = Client()
    assert client.post("/login/", {"password": "wrong"}).status_code == 401
    response = client.post("/login/?next=/settings/", {"password": "correct horse"})
    assert response.status_code == 302 and response["Location"] == "/settings/"
    assert client.get("/settings/").status_code == 200


def test_session_writes_need_the_csrf_token(protected):
    client = Client(enforce_csrf_checks=True)
    login_page = client.get("/login/")
    token = login_page.cookies["csrftoken"].value
    assert client.post("/login/", {"password": "correct horse"}).status_code == 403  # the form needs it too
    client.post("/login/", {"password": "correct horse", "csrfmiddlewaretoken": token})
    token = client.cookies["csrftoken"].value  # login rotates the token
    refused = client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert refused.status_code == 403 and refused.json()["error"] == "csrf_failed"
    refused_send = client.post("/api/conversations/x/messages/", {"content": "hi"}, content_type="application/json")
    assert refused_send.status_code == 403
    accepted = client.post(
        "/api/conversations/", {"persona": "elion"}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert accepted.status_code == 201


def test_without_protection_cross_site_browser_requests_are_refused():
    client = Client()
    response = client.post(
        "/api/conversations/", {"persona": "elion"}, content_type="application/json", HTTP_ORIGIN="http://evil.example"
    )
    assert response.status_code == 403 and response.json()["error"] == "cross_site_request"
    same_site = client.post(
        "/api/conversations/", {"persona": "elion"}, content_type="application/json", HTTP_ORIGIN="http://testserver"
    )
    assert same_site.status_code == 201


def test_without_a_password_the_app_refuses_to_bind_beyond_loopback():
    with pytest.raises(CommandError, match="loopback only"):
        call_command("check_bind", host="0.0.0.0")
    call_command("check_bind", host="127.0.0.1")
    call_command("check_bind", host="::1")


def test_with_a_password_a_network_bind_needs_the_served_host_names(protected):
    with pytest.raises(CommandError, match="ELION_ALLOWED_HOSTS"):
        call_command("check_bind", host="0.0.0.0")
    call_command("check_bind", host="127.0.0.1")
    protected.ELION_ALLOWED_HOSTS = ["chat.example.org"]
    call_command("check_bind", host="0.0.0.0")


@pytest.mark.asyncio
async def test_asgi_guard_refuses_non_loopback_connections_without_a_password():
    from elion.base.loopback_guard import LoopbackGuard

    sent = []

    async def inner(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(message):
        sent.append(message)

    guard = LoopbackGuard(inner)
    await guard({"type": "http", "server": ("192.0.2.10", 8000)}, None, send)
    assert sent[0]["status"] == 403
    sent.clear()
    await guard({"type": "http", "server": ("127.0.0.1", 8000)}, None, send)
    assert sent[0]["status"] == 200
