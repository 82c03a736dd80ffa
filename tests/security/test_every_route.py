"""Access rules checked on every route the URL resolver knows, so a new route is covered by itself.

- With owner password protection on, an anonymous client gets nothing: every `/api/` path
  answers 401 JSON, every page redirects to the login page; only the health check and the
  two login endpoints answer.
- A logged-in browser session cannot write without the CSRF token, on any route and method.
- With protection off (loopback only), a cross-site browser request is refused on every route.
"""

from __future__ import annotations

import pytest
from django.test import Client

from elion.base.access import get_owner_user
from tests.support.routes import ROUTES

pytestmark = pytest.mark.django_db

# Route patterns (as the resolver spells them) that answer without the owner.
# The service worker (issue 44) too: a browser checks it for updates whether or not a session is open.
PUBLIC_ROUTES = {"api/health/", "api/auth/login/", "login/", "sw.js"}
# The one public route that takes a write without a CSRF token: the password itself is the secret,
# and a session-less JSON login is how scripts authenticate.
CSRF_EXEMPT_ROUTES = {"api/auth/login/"}
UNSAFE_METHODS = ("post", "put", "patch", "delete")


@pytest.fixture
def protected(settings):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True
    return settings


def test_the_route_list_covers_the_whole_app():
    routes = {route for route, _ in ROUTES}
    for expected in ("api/conversations/<str:conversation_id>/messages/", "c/<str:conversation_id>/",
                     "admin/tools/continuity-cleanup/", "api/schema/", "archive/", "memories/", "settings/"):
        assert expected in routes
    assert len(routes) > 100  # the admin's model routes are in it too


def test_with_protection_every_route_refuses_an_anonymous_client(protected):
    client = Client()
    answered = set()
    for route, path in ROUTES:
        for method in ("get", *UNSAFE_METHODS):
            response = getattr(client, method)(path)
            if path.startswith("/api/"):
                refused = response.status_code == 401 and response.json()["error"] == "authentication_required"
            else:
                refused = response.status_code == 302 and response["Location"].startswith("/login/?next=")
            if not refused:
                answered.add(route)
    assert answered == PUBLIC_ROUTES


def test_with_protection_session_writes_need_the_csrf_token_on_every_route(protected):
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_owner_user())
    accepted = set()
    for route, path in ROUTES:
        for method in UNSAFE_METHODS:
            response = getattr(client, method)(path, "{}", content_type="application/json")
            if response.status_code not in (403, 405):  # 405: the route takes no such write at all
                accepted.add((route, method, response.status_code))
            elif response.status_code == 403 and path.startswith("/api/"):
                assert b"csrf_failed" in response.content, (method, path)  # /api/schema/ renders it as YAML
    assert {route for route, _, _ in accepted} == CSRF_EXEMPT_ROUTES, accepted
    # The same session with its token is let through (the refusals above were about the token).
    client.get("/settings/")
    token = client.cookies["csrftoken"].value
    response = client.post("/api/folders/", {"name": "With token"}, content_type="application/json",
                           HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 201


def test_without_protection_cross_site_requests_are_refused_on_every_route(settings):
    assert not settings.ELION_PROTECTED
    client = Client(HTTP_ORIGIN="http://evil.example")
    for route, path in ROUTES:
        for method in ("get", *UNSAFE_METHODS):
            response = getattr(client, method)(path)
            assert response.status_code == 403, (method, route)
            assert response.json()["error"] == "cross_site_request", (method, route)
