"""`{% artifact_cards message %}`: the cards of the artifacts a reply created or updated, from its tool parts.

A reply's card shows the version that reply wrote (title, kind, version,
Open, Copy, Download .md). Only a reply whose stored parts call an artifact
tool costs a query.
"""

from __future__ import annotations

from django import template

from artifacts import services
from transcript.models import Message

register = template.Library()

WRITING_TOOLS = frozenset({"create_artifact", "update_artifact"})


def writes_artifacts(message: Message) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name") in WRITING_TOOLS
        for part in message.parts or []
    )


@register.inclusion_tag("artifacts/_cards.html")
def artifact_cards(message: Message) -> dict:
    return {"versions": services.reply_versions(message.pk) if writes_artifacts(message) else []}
