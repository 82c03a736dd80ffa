"""`notify_owner`: one notification to every subscribed browser, never more than the owner allowed.

The payload is JSON, encrypted for each browser (aes128gcm, RFC 8291) and signed with the VAPID key:
`{"title", "url", "tag"}`, plus `"text"` only when the caller gives one *and* the Settings switch
`push_shows_text` is on. The service worker (`templates/service_worker.js`) shows it and opens `url` on a click.

Failures never reach the caller: a push service answering 404 or 410 means the browser dropped the
subscription, so it is deleted; any other answer, a timeout or a refused connection is recorded on the
subscription (`last_failure_at`, the newest `RECENT_FAILURES_KEPT` in `recent_failures`). Each request is
bounded by `ELION_PUSH_TIMEOUT_SECONDS`, for connecting and for reading.

Precondition: call it after the reply is committed, outside any transaction. It does network I/O for each
browser, which must never hold a transaction open; and a notification for a reply that then rolls back would
open nothing. Called inside a transaction anyway, it defers itself to `transaction.on_commit` (and returns None).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from functools import partial

import requests
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from pywebpush import WebPushException, webpush

from elion.base.assistant_settings import assistant_settings_read
from elion.models import PushSubscription
from operations.push.keys import vapid_signer

logger = logging.getLogger(__name__)

RECENT_FAILURES_KEPT = 5
# A phone that is off or offline gets the notification when it is back, within a day; after that it is stale.
TIME_TO_LIVE_SECONDS = 24 * 60 * 60
MAX_TITLE_CHARACTERS = 120
MAX_TEXT_CHARACTERS = 500  # a lock screen shows a few lines; the whole payload must stay under 4 KB
MAX_FAILURE_MESSAGE_CHARACTERS = 300
GONE = (404, 410)


@dataclass
class PushReport:
    """What one `notify_owner` call did: ids of the subscriptions delivered to, removed and failed."""

    delivered: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def push_payload(*, title: str, url: str, tag: str, text: str | None, shows_text: bool) -> dict:
    """The notification's JSON (pure): the text only when the owner allowed it."""
    payload = {"title": title[:MAX_TITLE_CHARACTERS], "url": url, "tag": tag}
    if shows_text and text:
        payload["text"] = text if len(text) <= MAX_TEXT_CHARACTERS else text[: MAX_TEXT_CHARACTERS - 1] + "…"
    return payload


def _inside_transaction() -> bool:
    # The test case's own wrapping atomic blocks are not the caller's transaction (Django marks them so).
    return any(not getattr(block, "_from_testcase", False) for block in connection.atomic_blocks)


def notify_owner(*, title: str, url: str, tag: str, text: str | None = None) -> PushReport | None:
    """Send one notification to every subscribed browser; never raises for a delivery failure.

    `url` is a same-site path (`/c/<conversation id>/?around=<message id>#message-<message id>`); `tag` groups notifications (a newer
    one with the same tag replaces the older on the device). Returns what happened, or None when it was
    deferred to after the caller's transaction commits (see the module's precondition)."""
    if _inside_transaction():
        transaction.on_commit(partial(notify_owner, title=title, url=url, tag=tag, text=text))
        return None
    report = PushReport()
    try:
        subscriptions = list(PushSubscription.objects.all())
        shows_text = assistant_settings_read().push_shows_text
    except DatabaseError:
        logger.exception("push: the subscriptions could not be read; nothing was sent")
        return report
    if not subscriptions:
        return report
    data = json.dumps(push_payload(title=title, url=url, tag=tag, text=text, shows_text=shows_text))
    try:
        signer = vapid_signer()
    except (OSError, ValueError) as exc:
        logger.exception("push: the VAPID key could not be read; nothing was sent")
        for subscription in subscriptions:
            _record_failure(subscription, status=None, message=f"VAPID key unreadable: {exc}", report=report)
        return report
    with requests.Session() as session:
        for subscription in subscriptions:
            _deliver(subscription, data=data, signer=signer, session=session, report=report)
    return report


def _deliver(subscription: PushSubscription, *, data: str, signer: object, session: requests.Session,
             report: PushReport) -> None:
    timeout = settings.ELION_PUSH_TIMEOUT_SECONDS
    try:
        webpush(
            subscription_info={"endpoint": subscription.endpoint,
                               "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth}},
            data=data,
            vapid_private_key=signer,
            vapid_claims={"sub": settings.ELION_PUSH_CONTACT},  # a fresh dict: webpush writes aud and exp into it
            ttl=TIME_TO_LIVE_SECONDS,
            timeout=(timeout, timeout),
            headers={"Urgency": "normal"},
            requests_session=session,
        )
    except WebPushException as exc:
        status = exc.status_code
        if status in GONE:
            _remove(subscription, status=status, report=report)
            return
        body = _response_text(exc)
        message = f"The push service answered {status}" + (f": {body}" if body else ".") if status else exc.message
        _record_failure(subscription, status=status, message=message, report=report)
        return
    except requests.RequestException as exc:
        _record_failure(subscription, status=None, message=f"No answer: {type(exc).__name__}: {exc}", report=report)
        return
    except Exception as exc:  # noqa: BLE001 - whatever one browser's delivery raises, the others still get theirs
        logger.exception("push: delivery to %s failed", subscription.pk)
        _record_failure(subscription, status=None, message=f"{type(exc).__name__}: {exc}", report=report)
        return
    try:
        PushSubscription.objects.filter(pk=subscription.pk).update(last_success_at=timezone.now())
    except DatabaseError:
        logger.exception("push: delivered to %s, but the success could not be recorded", subscription.pk)
    report.delivered.append(str(subscription.pk))


def _response_text(exc: WebPushException) -> str:
    try:
        return " ".join((exc.response.text or "").split())[:200]
    except AttributeError:
        return ""


def _remove(subscription: PushSubscription, *, status: int, report: PushReport) -> None:
    logger.info("push: %s answered %s; the subscription is removed", subscription.pk, status)
    try:
        # Only the row as it was sent to: a browser that re-subscribed meanwhile saved new keys under it.
        PushSubscription.objects.filter(pk=subscription.pk, p256dh=subscription.p256dh).delete()
    except DatabaseError:
        logger.exception("push: %s is gone, but could not be removed", subscription.pk)
    report.removed.append(str(subscription.pk))


def _record_failure(subscription: PushSubscription, *, status: int | None, message: str, report: PushReport) -> None:
    logger.warning("push: delivery to %s failed: %s", subscription.pk, message)
    now = timezone.now()
    failure = {"at": now.isoformat(), "status": status, "message": message[:MAX_FAILURE_MESSAGE_CHARACTERS]}
    report.failed.append(str(subscription.pk))
    try:
        # Read again, so a delivery running beside this one does not lose a failure the other recorded.
        with transaction.atomic():
            row = PushSubscription.objects.select_for_update().filter(pk=subscription.pk).first()
            if row is None:
                return
            row.recent_failures = [failure, *(row.recent_failures or [])][:RECENT_FAILURES_KEPT]
            row.last_failure_at = now
            row.save(update_fields=["recent_failures", "last_failure_at"])
    except DatabaseError:
        logger.exception("push: the failure of %s could not be recorded", subscription.pk)
