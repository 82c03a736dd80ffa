"""The owner's review of memory (issue 35): Suggestions, a memory's page (source, history, chats holding it),
"Memories in this chat", and the actions of a proposal card. Thin: every write goes through a service.

A proposal card (in the chat under the reply, and in Memories → Suggestions)
posts to `proposal_action`. Without JavaScript the action redirects back; with
it (`static/js/memory_proposals.js`, header `X-Elion-Fragment: card`) the
answer is the card itself, re-rendered, and replaces the old one.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from elion.base.errors import ServiceError
from elion.web.proposal_cards import PLACES, message_link, proposal_card_action
from memories.models import IMPORTANCE_MAX, IMPORTANCE_MIN, MemoryCategory, MemoryProposal, SnapshotMembership
from memories.services import memory_writes as services
from memories.services import proposals
from memories.services.snapshots import snapshot_members, snapshot_refresh
from transcript.access import access_conversation


def proposal_link(proposal: MemoryProposal) -> str:
    return message_link(proposal.conversation_id, proposal.source_message_id or proposal.reply_id)


def proposal_card_context(proposal: MemoryProposal, *, place: str) -> dict:
    """What one card shows. `in_this_chat`: the approved memory is in the proposing chat's snapshot
    (after "Also use it in this chat"); the card offers that action until then."""
    in_this_chat = bool(
        proposal.memory_id
        and proposal.conversation_id
        and SnapshotMembership.objects.filter(conversation_id=proposal.conversation_id, memory_id=proposal.memory_id)
        .exists()
    )
    return {
        "proposal": proposal,
        "category_label": MemoryCategory(proposal.category).label,
        "categories": MemoryCategory.choices,
        "importances": range(IMPORTANCE_MIN, IMPORTANCE_MAX + 1),
        "in_this_chat": in_this_chat,
        "source_link": proposal_link(proposal),
        "place": place if place in PLACES else "list",
        "action_route": "memory-proposal-action",  # the card's forms (proposals/_card.html)
        # Where a no-JS action lands: back in the chat at the message, or on Suggestions.
        "next": proposal_link(proposal) if place == "chat" else reverse("memory-suggestions"),
    }


def suggestions_page(request: HttpRequest) -> HttpResponse:
    rows = list(proposals.proposals_list())
    pending = [proposal_card_context(p, place="list") for p in rows if p.status == "pending"]
    dismissed = [proposal_card_context(p, place="list") for p in rows if p.status == "dismissed"]
    return render(request, "memories/suggestions.html", {"pending": pending, "dismissed": dismissed})


def _approve(request: HttpRequest, proposal_id: int) -> str:
    changes = {name: request.POST[name] for name in proposals.APPROVE_FIELDS if name in request.POST}
    proposals.proposal_approve(proposal_id=proposal_id, changes=changes)
    return "Saved to your memories. It reaches new chats only; this chat gets it if you choose."


def _dismiss(request: HttpRequest, proposal_id: int) -> str:
    proposals.proposal_dismiss(proposal_id=proposal_id)
    return "Suggestion dismissed. Elion will not suggest it again."


def _use_here(request: HttpRequest, proposal_id: int) -> str:
    proposal = proposals.access_proposal(proposal_id)
    if proposal.memory_id is None or proposal.conversation_id is None:
        raise ServiceError("Only an approved suggestion from a chat can be used in it.", code="proposal_not_approved")
    snapshot_refresh(proposal.conversation_id)
    return "Memory refreshed: this chat now holds your current memories."


ACTIONS = {"approve": _approve, "dismiss": _dismiss, "use-here": _use_here}


@require_POST
def proposal_action(request: HttpRequest, proposal_id: int, action: str) -> HttpResponse:
    return proposal_card_action(
        request, proposal_id, action, actions=ACTIONS, template="memories/_proposal_card.html",
        card=lambda pk, place: proposal_card_context(proposals.access_proposal(pk), place=place),
        back=reverse("memory-suggestions"),
    )


@require_POST
def clear_dismissed(request: HttpRequest) -> HttpResponse:
    cleared = proposals.proposals_clear_dismissed()
    messages.success(request, f"Cleared {cleared} dismissed suggestion{'' if cleared == 1 else 's'}.")
    return redirect("memory-suggestions")


def memory_page(request: HttpRequest, memory_id: int) -> HttpResponse:
    """One memory: where it came from (with a link to the source message), its history, how many chats hold it."""
    memory = services.memory_with_counts(memory_id)
    proposal = getattr(memory, "proposal", None)
    context = {
        "memory": memory,
        "proposal": proposal,
        "source_link": proposal_link(proposal) if proposal is not None else "",
        "history": services.memory_history(memory),
    }
    return render(request, "memories/detail.html", context)


def chat_memories_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """"Memories in this chat": the snapshot's memories, current text, and Refresh memory. No timing, no stale flag."""
    conversation = access_conversation(conversation_id)
    return render(
        request,
        "memories/in_chat.html",
        {"conversation": conversation, "memories": snapshot_members(conversation.pk)},
    )
