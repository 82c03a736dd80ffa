"""The action a proposal card posts, for both kinds of suggestion (memories: `memories.web.review`;
check-ins: `check_ins.web.proposal_cards`). Thin: each kind's action functions call its services.

Without JavaScript the action redirects back (the form's `next`, else the kind's list) with a flash
message; with it (`static/js/memory_proposals.js`, which drives every `[data-proposal-card]`, header
`X-Elion-Fragment: card`) the answer is the card itself, re-rendered with the note, or the refusal as
plain text with its status.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from elion.base.errors import ServiceError
from elion.base.local_redirect import redirect_local

FRAGMENT_HEADER = "HTTP_X_ELION_FRAGMENT"
# Where a card is shown: under the reply that made it, or in the kind's list.
PLACES = ("chat", "list")


def message_link(conversation_id: object, message_id: object) -> str:
    """A card's link to its source: the conversation opened at that message (hidden ones too: a deliberate
    read); "" when the conversation is gone."""
    if conversation_id is None:
        return ""
    base = reverse("chat", args=[conversation_id])
    return f"{base}?around={message_id}#message-{message_id}" if message_id else base


def proposal_card_action(
    request: HttpRequest, proposal_id: int, action: str, *,
    actions: Mapping[str, Callable[[HttpRequest, int], str]],
    card: Callable[[int, str], dict],
    template: str,
    back: str,
) -> HttpResponse:
    """Run `actions[action]` (its note), then answer with the card (`card(proposal_id, place)` rendered by
    `template`) or a redirect to the form's `next`, else `back`. A refusal answers its own status."""
    fragment = request.META.get(FRAGMENT_HEADER) == "card"
    function = actions.get(action)
    try:
        if function is None:
            raise ServiceError("No such action on a suggestion.", code="unknown_action", status=404)
        note = function(request, proposal_id)
    except ServiceError as exc:
        if fragment:
            return HttpResponse(exc.detail, status=exc.status, content_type="text/plain; charset=utf-8")
        messages.error(request, exc.detail)
        return redirect_local(request.POST.get("next"), back)
    if fragment:
        return render(request, template, {**card(proposal_id, request.POST.get("place", "")), "note": note})
    messages.success(request, note)
    return redirect_local(request.POST.get("next"), back)
