"""`notify_owner` over real HTTP: pywebpush sends to the tests' push service on loopback, which checks the
VAPID JWT and decrypts the payload with the subscribed browser's keys (tests/support/push_service.py).
Nothing of pywebpush is mocked."""

from __future__ import annotations

import socket
import threading

import pytest
from django.db import transaction
from django.test import Client

from elion.models import PushSubscription
from operations.push.delivery import MAX_TEXT_CHARACTERS, RECENT_FAILURES_KEPT, notify_owner
from operations.push.replies import notify_reply
from tests.support.factories import api_call, thread

pytestmark = pytest.mark.django_db

REPLY = "The interview went well, I hope? Tell me everything about the second round."


def subscribed(service, client: Client | None = None):
    browser = service.subscribe()
    api_call(client or Client(), "post", "/api/push/subscriptions/", browser.subscription_json(), status=201)
    return browser


def test_a_reply_notification_reaches_the_browser_signed_and_encrypted_without_its_text(push_service, settings):
    client = Client()
    browser = subscribed(push_service, client)
    chat = thread(("user", "I have an interview on Friday."), ("assistant", "Good luck!"))
    reply = chat.messages.filter(role="assistant").get()

    report = notify_reply(conversation_id=chat.id, message_id=reply.id, text=REPLY)

    [push] = push_service.received
    assert push.problem == "" and push.status == 201 and push.path == browser.endpoint.removeprefix(push_service.origin)
    # The VAPID JWT verified against `k` (the service checks the signature), and `k` is the app's published key.
    assert push.vapid_key == api_call(client, "get", "/api/push/key/")["public_key"]
    assert push.claims["aud"] == push_service.origin and push.claims["sub"] == settings.ELION_PUSH_CONTACT
    assert int(push.headers["ttl"]) > 0  # a phone that is offline still gets it later
    # Decrypted with the browser's private key and auth secret: the title and the reply's address, no text.
    assert push.payload == {
        "title": "Elion Voicefire wrote",
        "url": f"/c/{chat.id}/?around={reply.id}#message-{reply.id}",
        "tag": f"conversation-{chat.id}",
    }
    assert REPLY not in push.plaintext.decode()
    row = PushSubscription.objects.get()
    assert report.delivered == [str(row.id)] and row.last_success_at is not None and row.recent_failures == []


def test_the_text_travels_only_once_the_owner_turned_it_on_and_is_cut_short(push_service):
    client = Client()
    subscribed(push_service, client)
    api_call(client, "patch", "/api/settings/", {"push_shows_text": True, "display_name": "Wren"})
    notify_owner(title="Wren wrote", url="/c/1/#message-2", tag="t", text=REPLY)
    notify_owner(title="Wren wrote", url="/c/1/#message-3", tag="t", text="x" * 5000)
    api_call(client, "patch", "/api/settings/", {"push_shows_text": False})
    notify_owner(title="Wren wrote", url="/c/1/#message-4", tag="t", text=REPLY)

    first, long, off = (push.payload for push in push_service.received)
    assert first["text"] == REPLY and first["title"] == "Wren wrote"
    assert len(long["text"]) == MAX_TEXT_CHARACTERS and long["text"].endswith("…")
    assert "text" not in off


def test_a_failed_reply_says_so_and_never_carries_text(push_service):
    client = Client()
    subscribed(push_service, client)
    api_call(client, "patch", "/api/settings/", {"push_shows_text": True})
    notify_reply(conversation_id="c1", message_id="m1", text="half a reply", failed=True)
    [push] = push_service.received
    assert push.payload["title"] == "Elion Voicefire could not reply" and "text" not in push.payload


@pytest.mark.parametrize("status", [404, 410])
def test_a_subscription_the_push_service_says_is_gone_is_removed(push_service, status):
    gone = subscribed(push_service)
    kept = subscribed(push_service)
    gone.answers.append(status)
    report = notify_owner(title="Elion wrote", url="/", tag="t")
    assert len(push_service.received) == 2
    assert list(PushSubscription.objects.values_list("endpoint", flat=True)) == [kept.endpoint]
    assert len(report.removed) == 1 and len(report.delivered) == 1 and report.failed == []


def test_other_failures_are_recorded_on_the_subscription_and_listed_newest_first(push_service):
    client = Client()
    browser = subscribed(push_service, client)
    browser.answers.extend([500] * (RECENT_FAILURES_KEPT + 2))
    for _ in range(RECENT_FAILURES_KEPT + 2):
        report = notify_owner(title="Elion wrote", url="/", tag="t")
        assert report.failed and not report.delivered
    [listed] = api_call(client, "get", "/api/push/subscriptions/")["results"]
    assert len(listed["recent_failures"]) == RECENT_FAILURES_KEPT
    newest = listed["recent_failures"][0]
    assert newest["status"] == 500 and "500" in newest["message"] and newest["at"] == listed["last_failure_at"]
    assert listed["last_success_at"] is None
    # The settings page shows them too.
    page = client.get("/settings/").content.decode()
    assert "The push service answered 500" in page

    notify_owner(title="Elion wrote", url="/", tag="t")  # answers 201 again
    [listed] = api_call(client, "get", "/api/push/subscriptions/")["results"]
    assert listed["last_success_at"] is not None and len(listed["recent_failures"]) == RECENT_FAILURES_KEPT


@pytest.fixture
def silent_endpoint():
    """A loopback port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    worker = threading.Thread(target=accept, daemon=True)
    worker.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/push/silent"
    stop.set()
    worker.join()
    for connection in accepted:
        connection.close()
    listener.close()


def test_a_push_service_that_never_answers_or_refuses_the_connection_is_a_recorded_failure(
        push_service, settings, silent_endpoint):
    settings.ELION_PUSH_TIMEOUT_SECONDS = 1
    client = Client()
    healthy = subscribed(push_service, client)
    for endpoint in (silent_endpoint, "http://127.0.0.1:9/push/closed"):
        subscription = {**healthy.subscription_json(), "endpoint": endpoint}
        api_call(client, "post", "/api/push/subscriptions/", subscription, status=201)

    report = notify_owner(title="Elion wrote", url="/", tag="t")  # returns: never raises, never hangs

    assert len(report.delivered) == 1 and len(report.failed) == 2
    failures = {row.endpoint: row.recent_failures[0] for row in PushSubscription.objects.exclude(endpoint=healthy.endpoint)}
    assert failures[silent_endpoint]["status"] is None and "Timeout" in failures[silent_endpoint]["message"]
    assert "ConnectionError" in failures["http://127.0.0.1:9/push/closed"]["message"]


def test_inside_a_transaction_it_waits_for_the_commit(push_service, django_capture_on_commit_callbacks):
    subscribed(push_service)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert notify_owner(title="Elion wrote", url="/", tag="t") is None
        assert push_service.received == []
    assert len(push_service.received) == 1


def test_with_no_subscription_nothing_is_sent(push_service):
    report = notify_owner(title="Elion wrote", url="/", tag="t", text="x")
    assert report.delivered == report.failed == report.removed == [] and push_service.received == []


def test_the_push_service_refuses_a_token_not_signed_by_the_key_it_names(push_service):
    """The check the round trip relies on can fail: a JWT signed by one key and presented with another."""
    from py_vapid import Vapid

    from operations.push.keys import application_server_key
    from tests.support.push_service import PushCheckFailed, verified_vapid

    claims = {"sub": "mailto:owner@example.com", "aud": push_service.origin}
    other = Vapid()
    other.generate_keys()
    token = other.sign(dict(claims))["Authorization"].split("t=")[1].split(",")[0]
    with pytest.raises(PushCheckFailed, match="signature"):
        verified_vapid(f"vapid t={token},k={application_server_key()}", push_service.origin)
    signed = other.sign({**claims, "aud": "https://elsewhere.example"})["Authorization"]
    with pytest.raises(PushCheckFailed, match="aud"):
        verified_vapid(signed, push_service.origin)
