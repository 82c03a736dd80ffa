"""Throttling failed owner logins, per client address and overall, across every worker.

Five failures from one address within 15 minutes lock that address out for a
minute, and each further failure doubles the lock (capped at a day); 100
failures from everyone within the window lock every address out the same
way, so spreading a guess over many addresses does not help either. While
locked out even the right password is refused (429 with `Retry-After`),
otherwise guessing would go on. A successful login clears its address.
The counts are database rows (`elion.models.LoginFailure`), so several
Daphne workers share them on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils import timezone

from elion.models import LoginFailure

WINDOW = timedelta(minutes=15)
CLIENT_THRESHOLD = 5
OVERALL_THRESHOLD = 100
FIRST_LOCK = timedelta(minutes=1)
LONGEST_LOCK = timedelta(days=1)
OVERALL_KEY = "all"


def client_key(request: HttpRequest) -> str:
    return f"client:{request.META.get('REMOTE_ADDR') or 'unknown'}"[:100]


def login_retry_after(request: HttpRequest) -> int | None:
    """Seconds until a login may be tried again from this client, or None when it may now."""
    now = timezone.now()
    locks = LoginFailure.objects.filter(key__in=[client_key(request), OVERALL_KEY], locked_until__gt=now)
    latest = max((row.locked_until for row in locks), default=None)
    return math.ceil((latest - now).total_seconds()) if latest is not None else None


def login_failed(request: HttpRequest) -> None:
    """Count a wrong password for this client and overall; lock out once a threshold is reached."""
    for key, threshold in ((client_key(request), CLIENT_THRESHOLD), (OVERALL_KEY, OVERALL_THRESHOLD)):
        _count(key, threshold)


def login_succeeded(request: HttpRequest) -> None:
    LoginFailure.objects.filter(key=client_key(request)).delete()


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
