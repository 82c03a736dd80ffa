"""`{% check_in_proposal_cards message %}`: the cards of the check-ins a reply proposed, from its tool parts.

Only a reply whose stored parts call `propose_check_in` costs a query (issue 44, item 3).
"""

from __future__ import annotations

from django import template

from check_ins.services.proposals import reply_check_in_proposals
from check_ins.web.proposal_cards import proposal_card_context
from elion.base.assistant_settings import assistant_settings_read
from transcript.models import Message

register = template.Library()


def proposes_check_ins(message: Message) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name") == "propose_check_in"
        for part in message.parts or []
    )


@register.inclusion_tag("check_ins/_proposal_cards.html", takes_context=True)
def check_in_proposal_cards(context: template.Context, message: Message) -> dict:
    if not proposes_check_ins(message):
        return {"cards": []}
    zone_name = assistant_settings_read().time_zone
    cards = [proposal_card_context(p, place="chat", zone_name=zone_name) for p in reply_check_in_proposals(message.pk)]
    return {"cards": cards, "csrf_token": context.get("csrf_token")}
