"""The push API (docs/push.md): the key, subscribing (201, again 200), listing, removing; every bad input a 4xx
in the error shape; the key file; the service worker's route; the `push_shows_text` setting."""

from __future__ import annotations

import base64
import json
import stat
import uuid

import pytest
from django.test import Client

from elion.models import PushSubscription
from operations.push.keys import vapid_key_path
from operations.push.subscriptions import MAX_SUBSCRIPTIONS
from tests.support.factories import api_call
from tests.support.push_service import PushBrowser, b64url

pytestmark = pytest.mark.django_db

ENDPOINT = "https://fcm.googleapis.com/fcm/send/abc:APA91b-token"


@pytest.fixture
def keys_in(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


def browser_json(endpoint: str = ENDPOINT) -> dict:
    return PushBrowser(endpoint=endpoint).subscription_json()


def test_the_key_is_generated_once_kept_0600_in_the_data_dir_and_published_as_a_p256_point(keys_in):
    client = Client()
    assert not vapid_key_path().exists()
    first = api_call(client, "get", "/api/push/key/")["public_key"]
    assert api_call(client, "get", "/api/push/key/")["public_key"] == first
    path = keys_in / "vapid_private_key.pem"
    assert vapid_key_path() == path and stat.S_IMODE(path.stat().st_mode) == 0o600
    point = base64.urlsafe_b64decode(first + "=" * (-len(first) % 4))
    assert len(point) == 65 and point[0] == 4 and "=" not in first


def test_subscribing_twice_keeps_one_row_and_removing_it_twice_is_404(keys_in):
    client = Client()
    body = browser_json()
    created = api_call(client, "post", "/api/push/subscriptions/", body, status=201)
    again = {**body, "keys": browser_json()["keys"], "user_agent": "Firefox on Android"}
    same = api_call(client, "post", "/api/push/subscriptions/", again, status=200)
    assert same["id"] == created["id"] and PushSubscription.objects.count() == 1
    row = PushSubscription.objects.get()
    assert row.p256dh == again["keys"]["p256dh"] and row.user_agent == "Firefox on Android"
    listed = api_call(client, "get", "/api/push/subscriptions/")["results"]
    assert listed == [same] and same["endpoint_origin"] == "https://fcm.googleapis.com"
    assert "endpoint" not in same  # the endpoint is a capability: never shown again
    api_call(client, "delete", f"/api/push/subscriptions/{created['id']}/", status=204)
    gone = api_call(client, "delete", f"/api/push/subscriptions/{created['id']}/", status=404)
    assert gone["error"] == "push_subscription_not_found"
    assert api_call(client, "delete", "/api/push/subscriptions/not-a-uuid/", status=404)["error"]


def test_the_user_agent_header_labels_a_subscription_sent_without_a_label(keys_in):
    client = Client(HTTP_USER_AGENT="Mozilla/5.0 (Linux; Android 15) Chrome/140 Mobile")
    saved = api_call(client, "post", "/api/push/subscriptions/", browser_json(), status=201)
    assert saved["user_agent"].startswith("Mozilla/5.0 (Linux; Android 15)")


def _with(**changes) -> dict:
    body = browser_json()
    for name, value in changes.items():
        if name in ("p256dh", "auth"):
            body["keys"][name] = value
        else:
            body[name] = value
    return body


OFF_CURVE = b64url(b"\x04" + b"\x01" * 64)
BAD_BODIES = {
    "a list": [browser_json()],
    "no endpoint": {k: v for k, v in browser_json().items() if k != "endpoint"},
    "endpoint a number": _with(endpoint=12345),
    "endpoint an object": _with(endpoint={"url": ENDPOINT}),
    "endpoint plain http": _with(endpoint="http://push.example.com/send/1"),
    "endpoint http loopback (not allowed here)": _with(endpoint="http://127.0.0.1:9/push/1"),
    "endpoint ftp": _with(endpoint="ftp://push.example.com/1"),
    "endpoint javascript": _with(endpoint="javascript:alert(1)"),
    "endpoint without host": _with(endpoint="https:///send"),
    "endpoint with credentials": _with(endpoint="https://user:pw@push.example.com/1"),
    "endpoint bad port": _with(endpoint="https://push.example.com:99999/1"),
    "endpoint not ascii": _with(endpoint="https://push.example.com/" + "é" * 10),
    "endpoint huge": _with(endpoint="https://push.example.com/" + "a" * 5000),
    "keys missing": {k: v for k, v in browser_json().items() if k != "keys"},
    "keys a string": _with(keys="p256dh"),
    "p256dh missing": {**browser_json(), "keys": {"auth": browser_json()["keys"]["auth"]}},
    "p256dh not base64": _with(p256dh="not base64 !!"),
    "p256dh too short": _with(p256dh=b64url(b"\x04" + b"\x01" * 10)),
    "p256dh off the curve": _with(p256dh=OFF_CURVE),
    "p256dh huge": _with(p256dh="A" * 10_000),
    "auth 15 bytes": _with(auth=b64url(b"\x01" * 15)),
    "auth a number": _with(auth=16),
    "expirationTime text": _with(expirationTime="soon"),
    "user_agent huge": _with(user_agent="x" * 10_000),
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_bad_subscriptions_are_refused_with_the_error_shape(keys_in, name):
    response = Client().post("/api/push/subscriptions/", json.dumps(BAD_BODIES[name]), content_type="application/json")
    assert response.status_code == 400, (name, response.content[:300])
    body = response.json()
    assert set(body) >= {"error", "detail"} and body["detail"]
    assert PushSubscription.objects.count() == 0


def test_malformed_json_is_a_400(keys_in):
    response = Client().post("/api/push/subscriptions/", "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]


def test_http_to_loopback_is_taken_only_with_the_tests_switch(keys_in, settings):
    body = _with(endpoint="http://127.0.0.1:9/push/1")
    settings.ELION_PUSH_HTTP_LOOPBACK = True
    api_call(Client(), "post", "/api/push/subscriptions/", body, status=201)
    not_loopback = _with(endpoint="http://10.0.0.1/push/1")
    assert api_call(Client(), "post", "/api/push/subscriptions/", not_loopback, status=400)["error"] == \
        "invalid_push_endpoint"


def test_past_the_limit_a_new_browser_is_a_409_and_a_known_one_still_updates(keys_in):
    client = Client()
    bodies = [browser_json(f"{ENDPOINT}-{n}") for n in range(MAX_SUBSCRIPTIONS)]
    for body in bodies:
        api_call(client, "post", "/api/push/subscriptions/", body, status=201)
    refused = api_call(client, "post", "/api/push/subscriptions/", browser_json(f"{ENDPOINT}-x"), status=409)
    assert refused["error"] == "too_many_push_subscriptions"
    api_call(client, "post", "/api/push/subscriptions/", bodies[0], status=200)


def test_with_protection_the_push_api_needs_the_owner(keys_in, settings):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True
    for method, path in (("get", "/api/push/key/"), ("get", "/api/push/subscriptions/"),
                         ("post", "/api/push/subscriptions/"), ("delete", f"/api/push/subscriptions/{uuid.uuid4()}/")):
        response = getattr(Client(), method)(path)
        assert response.status_code == 401 and response.json()["error"] == "authentication_required"
    token = Client(HTTP_AUTHORIZATION="Bearer script-token")
    assert api_call(token, "get", "/api/push/key/")["public_key"]
    # The service worker answers without a login: a browser checks it for updates with or without a session.
    worker = Client().get("/sw.js")
    assert worker.status_code == 200 and worker["Content-Type"].startswith("text/javascript")
    assert worker["Service-Worker-Allowed"] == "/" and worker["Cache-Control"] == "no-cache"
    source = worker.content.decode()
    assert 'addEventListener("push"' in source and 'addEventListener("notificationclick"' in source
    assert "{%" not in source and "/static/icons/elion-192" in source


def test_push_shows_text_is_a_strict_switch_off_by_default(keys_in):
    client = Client()
    assert api_call(client, "get", "/api/settings/")["push_shows_text"] is False
    assert api_call(client, "patch", "/api/settings/", {"push_shows_text": True})["push_shows_text"] is True
    refused = api_call(client, "patch", "/api/settings/", {"push_shows_text": "yes"}, status=400)
    assert refused["error"] == "invalid_push_shows_text"
    # The Settings page's form carries it: unticked and saved, it is off.
    client.get("/settings/")
    page = client.get("/settings/").content.decode()
    assert 'name="push_shows_text" checked' in page and "data-push-enable" in page
    client.post("/settings/", {"owner_name": "AUMA", "display_name": "Elion Voicefire", "personality": "natural"})
    assert api_call(client, "get", "/api/settings/")["push_shows_text"] is False
