"""Building keyword recall's pure inputs and reading its rendered excerpts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from continuity.rules import recall_policy as kr

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def hit(content, *, conversation="c1", title="Lighthouse talk", role="user", message=None, minutes=0):
    return kr.RecallHit(
        message_id=message or f"{conversation}-{minutes}-{len(content)}",
        conversation_id=conversation,
        conversation_title=title,
        role=role,
        content=content,
        created_at=T0 + timedelta(minutes=minutes),
    )


def render(excerpts):
    return kr.render_recall_section(excerpts, persona="elion", owner_name="AUMA", display_name="Elion Voicefire")
