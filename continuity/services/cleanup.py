"""Continuity Cleanup: the owner's explicit removal of retired generated-summary rows.

Seed "Legacy continuity rows": a `conversation_summaries` row holding retired
generated-summary text (`summary` or `recent_raw`) and no verbatim `handoff`
may be removed by an authenticated owner; a row with a non-empty `handoff` is
protected whatever its retired columns hold. Never automatic.

- The preview answers counts and dates only, never text, and a scope token
  bound to the exact eligible set (ids, update times and retired-text lengths).
- Deletion needs that token, an acknowledged verified restorable backup and
  the exact phrase. Its transaction locks the table against writers,
  recomputes the scope and removes nothing if the token no longer matches.
- It deletes `conversation_summaries` rows and nothing else: handoffs,
  snapshots, messages, memories, archives, Library content and search data
  are other tables, and no row of them depends on these rows.

The API, the admin screen and `manage.py continuity_cleanup` all call these
functions; each refuses to work unless owner password protection is on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, Min, Q, QuerySet
from django.db.models.functions import Length

from continuity.models import ThreadHandoff
from elion.base.errors import Conflict, Forbidden, InvalidInput

CONFIRMATION_PHRASE = "DELETE RETIRED GENERATED SUMMARIES"
TOKEN_PREFIX = "cc1-"


# --- Selectors -------------------------------------------------------------


def protected_rows() -> QuerySet[ThreadHandoff]:
    """Rows with a verbatim handoff: never removed (even whitespace counts as a handoff here)."""
    return ThreadHandoff.objects.exclude(handoff="")


def eligible_rows() -> QuerySet[ThreadHandoff]:
    """Retired generated-summary text and an empty handoff."""
    return ThreadHandoff.objects.filter(handoff="").filter(~Q(summary="") | ~Q(recent_raw=""))


def eligible_scope_token(rows: QuerySet[ThreadHandoff] | None = None) -> str:
    """A digest of the exact eligible set: which rows, and each one's state.

    The update time catches saved changes; the retired-text lengths catch a
    bulk UPDATE that bypassed it. The text itself is never read out.
    """
    rows = eligible_rows() if rows is None else rows
    digest = hashlib.sha256()
    state = (
        rows.annotate(summary_length=Length("summary"), recent_length=Length("recent_raw"))
        .order_by("pk")
        .values_list("pk", "updated_at", "summary_length", "recent_length")
    )
    for pk, updated_at, summary_length, recent_length in state.iterator(chunk_size=2_000):
        digest.update(f"{pk}|{updated_at.isoformat()}|{summary_length}|{recent_length};".encode())
    return TOKEN_PREFIX + digest.hexdigest()


@dataclass(frozen=True)
class CleanupPreview:
    eligible_count: int
    protected_handoff_count: int
    oldest: datetime | None
    newest: datetime | None
    scope_token: str

    def as_dict(self) -> dict:
        return {
            "eligible_count": self.eligible_count,
            "protected_handoff_count": self.protected_handoff_count,
            "oldest": self.oldest.isoformat() if self.oldest else None,
            "newest": self.newest.isoformat() if self.newest else None,
            "scope_token": self.scope_token,
        }


def cleanup_available() -> None:
    """The workflow exists only when owner password protection is configured."""
    if not settings.ELION_PROTECTED:
        raise Forbidden(
            "Continuity Cleanup needs owner password protection: set ELION_OWNER_PASSWORD and log in as the owner.",
            code="owner_password_not_configured",
        )


def continuity_cleanup_preview() -> CleanupPreview:
    """Counts, dates (created times of the eligible rows) and the scope token; never text."""
    cleanup_available()
    rows = eligible_rows()
    bounds = rows.aggregate(oldest=Min("created_at"), newest=Max("created_at"))
    return CleanupPreview(
        eligible_count=rows.count(),
        protected_handoff_count=protected_rows().count(),
        oldest=bounds["oldest"],
        newest=bounds["newest"],
        scope_token=eligible_scope_token(rows),
    )


# --- Service ---------------------------------------------------------------


def _lock_table_against_writers() -> None:
    """Hold off inserts, updates and deletes on the table until we commit.

    Row locks cannot stop a new eligible row from appearing between the
    scope check and the DELETE; a table lock can. SQLite's IMMEDIATE
    transaction already holds the database's only write lock.
    """
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(ThreadHandoff._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")


def cleanup_request_check(*, scope_token: object, backup_verified: object, confirmation: object) -> str:
    """Shape and acknowledgement checks (400s), before any database work."""
    if not isinstance(scope_token, str) or not scope_token.startswith(TOKEN_PREFIX):
        raise InvalidInput("scope_token from the latest preview is required.", code="scope_token_required")
    if backup_verified is not True:
        raise InvalidInput(
            "Confirm that a restorable database backup has been verified (backup_verified: true).",
            code="backup_not_verified",
        )
    if confirmation != CONFIRMATION_PHRASE:
        raise InvalidInput(
            f'Type the exact phrase "{CONFIRMATION_PHRASE}" to confirm.', code="confirmation_mismatch"
        )
    return scope_token


def continuity_cleanup_delete(*, scope_token: object, backup_verified: object, confirmation: object) -> int:
    """Remove the previewed eligible rows; returns how many were removed.

    Raises `Conflict("scope_changed")` and removes nothing when the eligible
    set is not exactly the one the token was issued for.
    """
    cleanup_available()
    token = cleanup_request_check(scope_token=scope_token, backup_verified=backup_verified, confirmation=confirmation)
    # Atomic: the scope is recomputed and the rows deleted under one lock,
    # so what is removed is exactly what was previewed, or nothing.
    with transaction.atomic():
        _lock_table_against_writers()
        rows = eligible_rows()
        if eligible_scope_token(rows) != token:
            raise Conflict(
                "The eligible rows changed since the preview; nothing was removed. "
                "Review the updated preview and confirm again.",
                code="scope_changed",
            )
        # The filter restates the rule, so a protected row can never match.
        removed, _ = rows.filter(handoff="").delete()
    return removed
