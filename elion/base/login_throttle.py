"""Throttling failed owner logins, per client address and overall, across every worker, without
locking the owner out.

Five failures from one address within 15 minutes lock that address out for a
minute, and each further failure doubles the lock (capped at a day); 100
failures from everyone within the window lock every address out the same
way, so spreading a guess over many addresses does not help either. While
locked out even the right password is refused (429 with `Retry-After`),
otherwise guessing would go on.

A browser that has logged in before carries a signed login-device cookie
(`elion_login_device`, set on every successful login). Its attempts are
counted under that device alone, never under its address or the overall
count, and the locks others earned do not apply to it: someone guessing
from the owner's address (a shared NAT, the same proxy) cannot lock the
owner out. A device's own wrong guesses lock it the same way (5, then
doubling). A stolen device cookie buys one throttled bucket, not access.
A successful login clears its address and its device.
The counts are database rows (`elion.models.LoginFailure`), so several
Daphne workers share them on SQLite and PostgreSQL alike. docs/security.md
has the threat model.
"""

from __future__ import annotations

import math
import secrets
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from elion.models import LoginFailure

WINDOW = timedelta(minutes=15)
CLIENT_THRESHOLD = 5
OVERALL_THRESHOLD = 100
FIRST_LOCK = timedelta(minutes=1)
LONGEST_LOCK = timedelta(days=1)
OVERALL_KEY = "all"
DEVICE_COOKIE = "elion_login_device"
DEVICE_SALT = "elion.login-device"
DEVICE_MAX_AGE = 400 * 24 * 3600


def client_key(request: HttpRequest) -> str:
    return f"client:{request.META.get('REMOTE_ADDR') or 'unknown'}"[:100]


def login_device(request: HttpRequest) -> str | None:
    """The id in this browser's valid login-device cookie, or None."""
    raw = request.COOKIES.get(DEVICE_COOKIE)
    if not raw:
        return None
    try:
        device = signing.loads(raw, salt=DEVICE_SALT, max_age=DEVICE_MAX_AGE)
    except signing.BadSignature:
        return None
    return device if isinstance(device, str) and device.isalnum() else None


def throttle_keys(request: HttpRequest) -> list[tuple[str, int]]:
    """The counters this attempt is judged by, with their thresholds: its device's alone, or its
    address's and the overall one."""
    device = login_device(request)
    if device is not None:
        return [(f"device:{device}"[:100], CLIENT_THRESHOLD)]
    return [(client_key(request), CLIENT_THRESHOLD), (OVERALL_KEY, OVERALL_THRESHOLD)]


def login_retry_after(request: HttpRequest) -> int | None:
    """Seconds until a login may be tried again from this client, or None when it may now."""
    now = timezone.now()
    keys = [key for key, _threshold in throttle_keys(request)]
    locks = LoginFailure.objects.filter(key__in=keys, locked_until__gt=now)
    latest = max((row.locked_until for row in locks), default=None)
    return math.ceil((latest - now).total_seconds()) if latest is not None else None


def login_failed(request: HttpRequest) -> None:
    """Count a wrong password against this attempt's counters; lock out once a threshold is reached."""
    for key, threshold in throttle_keys(request):
        _count(key, threshold)


def login_succeeded(request: HttpRequest) -> None:
    keys = [client_key(request)] + [key for key, _threshold in throttle_keys(request) if key.startswith("device:")]
    LoginFailure.objects.filter(key__in=keys).delete()


def login_device_remember(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """After a successful login: this browser carries a login-device cookie (its own, or a new one)."""
    device = login_device(request) or secrets.token_hex(16)
    response.set_cookie(
        DEVICE_COOKIE, signing.dumps(device, salt=DEVICE_SALT), max_age=DEVICE_MAX_AGE, httponly=True,
        samesite="Lax", secure=settings.SESSION_COOKIE_SECURE,
    )
    return response


def _count(key: str, threshold: int) -> None:
    now = timezone.now()
    for _attempt in range(2):  # a concurrent first failure may create the row first
        try:
            with transaction.atomic():
                row = LoginFailure.objects.select_for_update().filter(key=key).first()
                if row is None:
                    row = LoginFailure.objects.create(key=key, failures=0, window_started_at=now)
                locked = row.locked_until is not None and row.locked_until > now
                if now - row.window_started_at > WINDOW and not locked:
                    row.failures, row.window_started_at, row.locked_until = 0, now, None
                row.failures += 1
                if row.failures >= threshold:
                    lock = min(FIRST_LOCK * 2 ** (row.failures - threshold), LONGEST_LOCK)
                    row.locked_until = now + lock
                row.save()
                return
        except IntegrityError:
            continue
