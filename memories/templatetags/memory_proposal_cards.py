"""`{% memory_proposal_cards message %}`: the quiet cards of the memories a reply proposed, from its tool parts.

Only a reply whose stored parts call `propose_memory` costs a query (two
when one of its proposals was approved: is it in this chat's snapshot yet).
"""

from __future__ import annotations

from django import template

from memories.services.proposals import reply_proposals
from memories.web.review import proposal_card_context
from transcript.models import Message

register = template.Library()


def proposes_memories(message: Message) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name") == "propose_memory"
        for part in message.parts or []
    )


@register.inclusion_tag("memories/_proposal_cards.html", takes_context=True)
def memory_proposal_cards(context: template.Context, message: Message) -> dict:
    if not proposes_memories(message):
        return {"cards": []}
    cards = [proposal_card_context(p, place="chat") for p in reply_proposals(message.pk)]
    return {"cards": cards, "csrf_token": context.get("csrf_token")}
