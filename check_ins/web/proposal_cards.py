"""A check-in proposal's card (issue 44, item 3): under the reply that made it, and in Settings → Check-ins.
Thin: every write goes through `check_ins.services.proposals`.

The card posts to `proposal_action`, as a memory suggestion's card does (`memories.web.review`): without
JavaScript the action redirects back; with it (`static/js/memory_proposals.js`, which drives every
`[data-proposal-card]`, header `X-Elion-Fragment: card`) the answer is the card itself, re-rendered.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from check_ins.models import CheckInProposal, ScheduleKind, TargetKind
from check_ins.services import proposals
from check_ins.web import forms
from elion.base.assistant_settings import assistant_settings_read
from elion.web.proposal_cards import PLACES, message_link, proposal_card_action

# What the card's Edit may change (the zone and quiet hours are Settings → Check-ins' to edit afterwards).
CARD_FIELDS = ("title", "brief", "schedule", "target")


def proposal_link(proposal: CheckInProposal) -> str:
    return message_link(proposal.conversation_id, proposal.reply_message_id or proposal.source_message_id)


def form_choices() -> dict:
    return {"kinds": ScheduleKind.choices, "weekdays": [(d, forms.DAY_NAMES[d][:3]) for d in forms.WEEKDAYS]}


def proposal_card_context(proposal: CheckInProposal, *, place: str, zone_name: str | None = None) -> dict:
    """What one card shows: the schedule and target in words, the form's values for Edit, and once
    approved the check-in's next run."""
    zone_name = zone_name or assistant_settings_read().time_zone
    values = forms.FormValues(
        title=proposal.title, brief=proposal.brief, target=proposal.target_kind,
        conversation_id=str(proposal.conversation_id or ""), time_zone=zone_name,
    )
    forms.values_from_schedule(values, proposal.schedule)
    check_in = proposal.check_in if proposal.check_in_id else None
    in_chat = proposal.target_kind == TargetKind.CONVERSATION
    return {
        "proposal": proposal,
        "when": forms.schedule_words(proposal.schedule),
        "where": "in this chat" if in_chat else "in a new chat each time",
        "time_zone": zone_name,
        "values": values,
        "prefix": f"proposal-{proposal.pk}-",
        "conversation_title": proposal.conversation.display_title if proposal.conversation_id else "",
        "next_run": forms.local_words(check_in.next_run_at, check_in.time_zone) if check_in else "",
        "source_link": proposal_link(proposal),
        "place": place if place in PLACES else "list",
        "action_route": "check-in-proposal-action",  # the card's forms (proposals/_card.html)
        # Where a no-JS action lands: back in the chat at the reply, or on Settings → Check-ins.
        "next": proposal_link(proposal) if place == "chat" else reverse("settings-check-ins"),
        **form_choices(),
    }


def _approve(request: HttpRequest, proposal_id: int) -> str:
    changes = forms.fields_from_form(request.POST, names=CARD_FIELDS)
    check_in = proposals.check_in_proposal_approve(proposal_id=proposal_id, changes=changes)
    when = forms.local_words(check_in.next_run_at, check_in.time_zone)
    return f"Scheduled. It first runs {when} ({check_in.time_zone})." if when else "Scheduled."


def _dismiss(request: HttpRequest, proposal_id: int) -> str:
    proposals.check_in_proposal_dismiss(proposal_id=proposal_id)
    return "Suggestion dismissed. Elion will not suggest it again."


ACTIONS = {"approve": _approve, "dismiss": _dismiss}


@require_POST
def proposal_action(request: HttpRequest, proposal_id: int, action: str) -> HttpResponse:
    return proposal_card_action(
        request, proposal_id, action, actions=ACTIONS, template="check_ins/_proposal_card.html",
        card=lambda pk, place: proposal_card_context(proposals.access_check_in_proposal(pk), place=place),
        back=reverse("settings-check-ins"),
    )
