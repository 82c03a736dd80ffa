"""Web Push in chromium, desktop and phone (issue 44, docs/push.md), with the notification permission granted.

What is real: Daphne serving the app, chromium registering `/sw.js`, the Settings control asking for the
permission and POSTing the subscription, `notify_reply` sending through pywebpush to the tests' push service
on loopback, which checks the VAPID JWT and decrypts the payload with the browser's keys; that decrypted
payload is then delivered to the registered service worker by chromium's own push path for DevTools
(`ServiceWorker.deliverPushMessage`), which fires the worker's real `push` event; the notification it shows
is read back with `registration.getNotifications()`.

What is not: chromium's `PushManager.subscribe` talks to Google's push service (FCM), unreachable here, so the
page's `subscribe` is replaced by one returning the loopback browser's subscription (the key the page passes
is checked). Headless chromium has no notification on screen to click: the click is a `notificationclick`
event dispatched in the worker with the notification it showed; the worker's handler then takes the open
window to the reply. Opening a new window (no window of the app open) needs a real click's user activation
and is not covered here.
"""

from __future__ import annotations

import base64
import json
import time

import pytest
from playwright.sync_api import expect

from elion.models import PushSubscription
from operations.push.keys import application_server_key
from operations.push.replies import notify_reply
from tests.pages.conftest import start_daphne, stop_daphne
from tests.support.browser_waits import WAIT_MS, WAIT_SECONDS
from tests.support.factories import thread
from tests.support.push_service import PushService

pytestmark = pytest.mark.slow

VIEWPORTS = {
    "desktop": {"viewport": {"width": 1366, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}
REPLY = "Did the interview go well? I kept thinking of you."


@pytest.fixture(scope="module")
def push_app(django_db_setup, django_db_blocker, tmp_path_factory):
    """Daphne with the offline provider, taking the loopback push service's plain-http endpoint."""
    with django_db_blocker.unblock():
        app = start_daphne("push", {"ELION_PUSH_HTTP_LOOPBACK": "1"}, tmp_path_factory.mktemp("daphne"))
    yield app
    stop_daphne(app)


@pytest.fixture
def push_service(transactional_db, push_app, settings):
    settings.ELION_PUSH_HTTP_LOOPBACK = True
    with PushService() as service:
        yield service


@pytest.fixture(params=list(VIEWPORTS))
def push_page(request, browser, push_app, push_service):
    context = browser.new_context(**VIEWPORTS[request.param])
    context.grant_permissions(["notifications"], origin=push_app.url)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", lambda message: page.errors.append(message.text) if message.type == "error" else None)
    yield page
    context.close()
    assert page.errors == []


def worker_ready(page) -> dict:
    """Wait for the page to be controlled by the app's service worker; its script URL and scope."""
    # Polled from here: a string predicate polled in the page would be an eval, which the CSP refuses.
    deadline = time.monotonic() + WAIT_SECONDS
    while not page.evaluate("navigator.serviceWorker.controller !== null"):
        assert time.monotonic() < deadline, "the page never came under the service worker"
        page.wait_for_timeout(50)
    return page.evaluate(
        "navigator.serviceWorker.ready.then(r => ({script: r.active.scriptURL, scope: r.scope}))"
    )


NOTIFICATIONS_SCRIPT = """navigator.serviceWorker.ready.then(r => r.getNotifications()).then(list => list.map(n => (
    {title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url})))"""
# DevTools' push delivery is fire-and-forget: on a loaded machine a delivery was once lost (no `push` event, no
# notification within 30 s). Delivered again after this long without a notification; the worker's notification
# carries one tag per conversation, so a second delivery replaces rather than adds.
REDELIVER_SECONDS = 10


def pushed_and_shown(page, origin: str, data: bytes) -> list[dict]:
    """Deliver `data` to the registered worker's `push` event; the notifications it then shows."""
    deadline = time.monotonic() + 2 * WAIT_SECONDS
    while True:
        deliver_push(page, origin, data)
        redeliver_at = time.monotonic() + REDELIVER_SECONDS
        while not (shown := page.evaluate(NOTIFICATIONS_SCRIPT)) and time.monotonic() < redeliver_at:
            page.wait_for_timeout(100)
        if shown:
            return shown
        assert time.monotonic() < deadline, "no notification shown"


def deliver_push(page, origin: str, data: bytes) -> None:
    """Chromium's DevTools push path: the registered worker's real `push` event, carrying `data`."""
    cdp = page.context.new_cdp_session(page)
    registrations: list[dict] = []
    cdp.on("ServiceWorker.workerRegistrationUpdated", lambda event: registrations.extend(event["registrations"]))
    cdp.send("ServiceWorker.enable")
    deadline = time.monotonic() + WAIT_SECONDS
    while not [r for r in registrations if r["scopeURL"] == f"{origin}/" and not r["isDeleted"]]:
        assert time.monotonic() < deadline, registrations
        page.wait_for_timeout(50)
    [registration] = [r for r in registrations if r["scopeURL"] == f"{origin}/" and not r["isDeleted"]]
    cdp.send("ServiceWorker.deliverPushMessage",
             {"origin": origin, "registrationId": registration["registrationId"], "data": data.decode()})


def test_the_service_worker_registers_and_turn_on_notifications_subscribes_this_browser(push_page, push_app,
                                                                                        push_service):
    browser = push_service.subscribe()
    # Chromium's own subscribe would ask Google's push service: the loopback browser's subscription instead,
    # handed back only for the server's key (the page must pass it).
    push_page.add_init_script(
        f"""
        PushManager.prototype.subscribe = async function (options) {{
          const key = btoa(String.fromCharCode(...new Uint8Array(options.applicationServerKey)));
          window.pushSubscribeCalls = (window.pushSubscribeCalls || []).concat([{{
            key, userVisibleOnly: options.userVisibleOnly }}]);
          const json = {json.dumps(browser.subscription_json())};
          return {{ toJSON: () => json, unsubscribe: async () => true }};
        }};
        """
    )
    push_page.goto(f"{push_app.url}/settings/")
    registered = worker_ready(push_page)
    assert registered == {"script": f"{push_app.url}/sw.js", "scope": f"{push_app.url}/"}
    # Installable: chromium's own check of the manifest, icons and worker finds nothing missing (a Playwright
    # context is an incognito profile, where chromium never offers to install: that one is expected).
    installability = push_page.context.new_cdp_session(push_page).send("Page.getInstallabilityErrors")
    assert [error["errorId"] for error in installability["installabilityErrors"]] == ["in-incognito"]

    push_page.get_by_role("button", name="Turn on notifications").click()
    expect(push_page.locator("[data-push-status]")).to_have_text("Notifications are on in this browser.")
    [call] = push_page.evaluate("window.pushSubscribeCalls")
    assert call["userVisibleOnly"] is True
    assert base64.b64decode(call["key"]) == base64.urlsafe_b64decode(application_server_key() + "=")
    row = PushSubscription.objects.get()
    assert row.endpoint == browser.endpoint and row.p256dh == browser.p256dh
    assert "Mozilla" in row.user_agent
    # The page lists the subscribed browser.
    push_page.reload()
    expect(push_page.locator(f"[data-push-subscription='{row.id}']")).to_be_visible()


@pytest.mark.parametrize("shows_text", [False, True], ids=["private", "with-text"])
def test_a_push_shows_a_notification_and_clicking_it_opens_the_reply(push_page, push_app, push_service, shows_text):
    from conversations.services.settings_writes import assistant_settings_update

    assistant_settings_update(push_shows_text=shows_text)
    chat = thread(("user", "The interview is on Friday."), ("assistant", REPLY), title="Interview")
    reply = chat.messages.filter(role="assistant").get()
    browser = push_service.subscribe()
    PushSubscription.objects.create(endpoint=browser.endpoint, p256dh=browser.p256dh,
                                    auth=browser.subscription_json()["keys"]["auth"])
    push_page.goto(f"{push_app.url}/settings/")
    worker_ready(push_page)

    report = notify_reply(conversation_id=chat.id, message_id=reply.id, text=REPLY)
    assert report.delivered and not report.failed
    [push] = push_service.received
    [shown] = pushed_and_shown(push_page, push_app.url, push.plaintext)
    target = f"{push_app.url}/c/{chat.id}/?around={reply.id}#message-{reply.id}"
    assert shown == {"title": "Elion Voicefire wrote", "body": REPLY if shows_text else "",
                     "tag": f"conversation-{chat.id}", "url": target}

    [worker] = push_page.context.service_workers
    worker.evaluate(
        """async () => {
          const [notification] = await self.registration.getNotifications();
          self.dispatchEvent(new NotificationEvent("notificationclick", { notification }));
        }"""
    )
    push_page.wait_for_url(target)
    expect(push_page.locator(f"#message-{reply.id}")).to_be_visible()
    # The click closed it.
    assert push_page.evaluate("navigator.serviceWorker.ready.then(r => r.getNotifications()).then(l => l.length)") == 0
