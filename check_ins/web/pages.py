"""Settings → Check-ins (issue 44, item 5): the list with next and last run, Run now, Pause / Resume and
Delete, and the create / edit form (also opened from a chat's "Check in" action, this chat as the target).
Thin: every write goes through `check_ins.services`.

Run now is `POST /api/check-ins/{id}/run/` from `static/js/check_ins.js` (without JavaScript, the form posts to
`check_in_run_page`: the same `check_in_run_now`), with the Idempotency-Key the page rendered into the button's
form: a double click, or a retry after a lost answer, runs it once.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from check_ins.models import CheckIn
from check_ins.sending.run_now import check_in_run_now
from check_ins.services.check_ins import access_check_in, check_in_create, check_in_delete, check_in_update
from check_ins.services.listing import check_ins_listing
from check_ins.web import forms
from check_ins.web.proposal_cards import form_choices, proposal_card_context
from continuity.rules.eligibility import may_write_first
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import NotFound, ServiceError
from elion.base.rows import parse_id
from elion.base.time_zones import time_zone_names
from operations.push.subscriptions import push_subscriptions_listing
from transcript.models import Conversation

FORM_FIELDS = ("title", "brief", "schedule", "target", "time_zone", "quiet_hours")


def _row(check_in: CheckIn, last_run: object) -> dict:
    return {
        "check_in": check_in,
        "when": forms.schedule_words(forms.check_in_schedule(check_in)),
        "where": (f"in “{check_in.conversation.display_title}”" if check_in.conversation_id and check_in.conversation
                  else "in a new chat each time"),
        "next_run": forms.local_words(check_in.next_run_at, check_in.time_zone),
        "last_run": forms.local_words(check_in.last_run_at, check_in.time_zone),
        "run": last_run,
        "run_key": uuid.uuid4(),
    }


def check_ins_page(request: HttpRequest) -> HttpResponse:
    listing = check_ins_listing()
    zone_name = assistant_settings_read().time_zone
    return render(request, "check_ins/list.html", {
        "rows": [_row(c, listing.last_runs.get(c.pk)) for c in listing.check_ins],
        "proposals": [proposal_card_context(p, place="list", zone_name=zone_name) for p in listing.pending_proposals],
        "time_zone": zone_name,
        # Where a check-in's reply is announced, and the deliveries that failed (issue 44 item 4).
        "push_subscriptions": push_subscriptions_listing(),
    })


def _target_conversation(raw_id: str) -> tuple[Conversation | None, str]:
    """The chat a "Check in" action names, and why a check-in may not write there ("" when it may)."""
    pk = parse_id(raw_id, "uuid")
    conversation = Conversation.objects.select_related("folder").filter(pk=pk).first() if pk else None
    if conversation is None:
        return None, ""
    return conversation, may_write_first(conversation) or ""


def _form_page(request: HttpRequest, *, values: forms.FormValues, check_in: CheckIn | None, error: str = "",
               conversation: Conversation | None = None, refusal: str = "", status: int = 200) -> HttpResponse:
    if conversation is None and values.conversation_id:
        conversation = Conversation.objects.filter(pk=parse_id(values.conversation_id, "uuid")).first()
    return render(request, "check_ins/form.html", {
        "values": values, "check_in": check_in, "error": error, "refusal": refusal,
        "conversation_title": conversation.display_title if conversation else "",
        "time_zones": time_zone_names(), **form_choices(),
    }, status=status)


def check_in_new(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    base = forms.FormValues(time_zone=assistant_settings_read().time_zone)
    if request.method == "POST":
        try:
            check_in = check_in_create(**forms.fields_from_form(request.POST, names=FORM_FIELDS))
        except ServiceError as exc:
            return _form_page(request, values=forms.posted_values(request.POST, base), check_in=None,
                              error=exc.detail, status=exc.status)
        messages.success(request, f"Check-in “{check_in.title}” saved.")
        return redirect("settings-check-ins")
    conversation, refusal = _target_conversation(request.GET.get("conversation", ""))
    if conversation is not None and not refusal:
        base.target, base.conversation_id = "conversation", str(conversation.pk)
    return _form_page(request, values=base, check_in=None, conversation=conversation, refusal=refusal)


def check_in_edit(request: HttpRequest, check_in_id: str) -> HttpResponse:
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    try:
        check_in = access_check_in(check_in_id)
    except NotFound as exc:
        messages.error(request, exc.detail)
        return redirect("settings-check-ins")
    if request.method == "POST":
        changes = forms.fields_from_form(request.POST, names=FORM_FIELDS)
        try:
            check_in = check_in_update(check_in_id=check_in.pk, **changes)
        except ServiceError as exc:
            values = forms.posted_values(request.POST, forms.check_in_values(check_in))
            return _form_page(request, values=values, check_in=check_in, error=exc.detail, status=exc.status)
        messages.success(request, f"Check-in “{check_in.title}” saved.")
        return redirect("settings-check-ins")
    return _form_page(request, values=forms.check_in_values(check_in), check_in=check_in)


def _act(request: HttpRequest, done: str, action: object) -> HttpResponse:
    try:
        action()
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, done)
    return redirect("settings-check-ins")


@require_POST
def check_in_pause(request: HttpRequest, check_in_id: str) -> HttpResponse:
    return _act(request, "Paused: it will not run until you resume it.",
                lambda: check_in_update(check_in_id=check_in_id, enabled=False))


@require_POST
def check_in_resume(request: HttpRequest, check_in_id: str) -> HttpResponse:
    return _act(request, "Resumed.", lambda: check_in_update(check_in_id=check_in_id, enabled=True))


@require_POST
def check_in_delete_page(request: HttpRequest, check_in_id: str) -> HttpResponse:
    return _act(request, "Check-in deleted. The replies it wrote stay in their chats.",
                lambda: check_in_delete(check_in_id=check_in_id))



@require_POST
def check_in_run_page(request: HttpRequest, check_in_id: str) -> HttpResponse:
    """Run now without JavaScript: the same run as the API's, named by the key the page rendered."""
    try:
        result = check_in_run_now(check_in_id=check_in_id, idempotency_key=request.POST.get("idempotency_key"))
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return redirect("settings-check-ins")
    messages.success(request, "Elion wrote the check-in's reply.")
    return redirect(f"{reverse('chat', args=[result.conversation_id])}?around={result.message_id}")
