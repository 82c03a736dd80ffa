"""The paged messages API: `GET …/messages/?limit=N` with `before=<id>` or `around=<id>` (docs/api.md).

Reading the query string is here; which messages a window holds is
`transcript.branch_window`. Without `limit` (and without a
cursor) the list is the whole live branch, as before paging existed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from elion.base.errors import InvalidInput
from transcript.branch_window import (
    BranchWindow,
    branch_window_around,
    branch_window_before,
    branch_window_newest,
)
from transcript.models import Conversation

PAGE_LIMIT_MAX = 200
_DIGITS = re.compile(r"[0-9]{1,6}")


@dataclass(frozen=True)
class PageRequest:
    limit: int
    before: UUID | None = None
    around: UUID | None = None


def _limit(raw: str | None) -> int:
    if raw is None or not _DIGITS.fullmatch(raw) or not 1 <= int(raw) <= PAGE_LIMIT_MAX:
        raise InvalidInput(
            f"limit must be a whole number from 1 to {PAGE_LIMIT_MAX} (and is required with before or around).",
            code="invalid_limit",
        )
    return int(raw)


def _cursor(raw: str, name: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError as exc:
        raise InvalidInput(f"{name} must be the id of a message.", code="invalid_cursor") from exc


def page_request(params: Mapping[str, str]) -> PageRequest | None:
    """The page the query asks for; None for the whole live branch (no `limit`, no cursor).

    400 `invalid_cursor`: `before` or `around` is not a message id, or both are
    given; 400 `invalid_limit`: `limit` is not 1 to PAGE_LIMIT_MAX, or is missing
    beside a cursor.
    """
    before, around, limit = params.get("before"), params.get("around"), params.get("limit")
    if before is not None and around is not None:
        raise InvalidInput("Give before or around, not both.", code="invalid_cursor")
    if limit is None and before is None and around is None:
        return None
    before_id = _cursor(before, "before") if before is not None else None
    around_id = _cursor(around, "around") if around is not None else None
    return PageRequest(limit=_limit(limit), before=before_id, around=around_id)


def message_window(conversation: Conversation, page: PageRequest) -> BranchWindow:
    """The window `page` names (404 `message_not_found` for a cursor not on the live branch)."""
    if page.before is not None:
        return branch_window_before(conversation, cursor_id=page.before, limit=page.limit)
    if page.around is not None:
        return branch_window_around(conversation, cursor_id=page.around, limit=page.limit)
    return branch_window_newest(conversation, limit=page.limit)
