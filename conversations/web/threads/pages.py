"""The chat pages: the landing page, New Chat (and "Start without it"), a conversation's page and
its window of bubbles. Thin: every write goes through a service.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from continuity.rules.eligibility import outside_quarantine
from continuity.services.new_chat_handoff import new_chat_handoff_drop, new_chat_handoff_notice
from continuity.web.conversation_shape import conversation_in_view
from conversations.services.characters import characters_list
from conversations.services.message_selectors import message_window
from conversations.services.threads.thread_writes import conversation_create, conversation_mark_read
from conversations.services.visibility.past_search import quoted_excerpt
from conversations.services.visibility.selectors import chat_visibility
from conversations.web import message_paging, page_selectors
from elion.base.assistant_settings import assistant_settings_get
from elion.base.errors import NotFound, ServiceError
from elion.models import AssistantSettings
from transcript.access import access_conversation
from transcript.branch_window import BranchWindow
from transcript.leases import stale_streams_read_as_interrupted
from transcript.models import Conversation, MessageStatus, Persona


def home(request: HttpRequest) -> HttpResponse:
    # Opening a hidden-folder conversation is deliberate access, never a landing page.
    latest = outside_quarantine().first()
    if latest is not None:
        return redirect("chat", conversation_id=latest.id)
    return render(request, "chat/empty.html")


def new_chat(request: HttpRequest) -> HttpResponse:
    """POST starts a chat; GET (an address typed or bookmarked) shows the choice: a new chat or a private one."""
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponse("Use GET to choose or POST to start a chat.", status=405, headers={"Allow": "GET, POST"})
    if request.method != "POST":
        return render(request, "chat/empty.html", {"choosing": True})
    persona = request.POST.get("persona", "elion")
    # "Private chat" is the form's second submit button; "Use memories" its checkbox.
    private = request.POST.get("private") == "on"
    try:
        conversation = conversation_create(
            persona=persona, private=private, use_memories=private and request.POST.get("use_memories") == "on"
        )
    except ServiceError as exc:
        return HttpResponse(exc.detail, status=exc.status)
    return redirect("chat", conversation_id=conversation.id)


@require_POST
def new_chat_handoff_drop_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """"Start without it": the New Chat's handoff is left out before its first send."""
    try:
        conversation = new_chat_handoff_drop(conversation_id=conversation_id)
    except NotFound as exc:
        messages.error(request, exc.detail)
        return redirect("home")
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return redirect("chat", conversation_id=conversation_id)
    messages.success(request, "This chat starts without the earlier conversation: its first request carries none of it.")
    return redirect("chat", conversation_id=conversation.id)


def _window_context(conversation: Conversation, window: BranchWindow, settings_row: AssistantSettings) -> dict:
    """What `chat/_window.html` needs: the window's bubbles, its edges, the compaction marker's
    place and the estimate of the live-branch messages not rendered."""
    shown = page_selectors.visible_messages(window)
    # A reply left `streaming` by a dead process shows as interrupted, with Retry.
    stale_streams_read_as_interrupted(shown)
    bubbles = page_selectors.bubbles_for(conversation, shown, settings_row)
    token_estimate = page_selectors.branch_estimate(conversation)
    return {
        "bubbles": bubbles,
        "window": window,
        "token_estimate": token_estimate,
        "tokens_outside": token_estimate - sum(bubble.tokens for bubble in bubbles),
        "compaction": page_selectors.compaction_in_force(conversation),
        # Where the last send's request began (a divider above that message): stored by the send.
        "in_view": conversation_in_view(conversation),
    }


def chat_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = access_conversation(conversation_id)
    # The owner opened it: what a check-in wrote here is read (the owner's act, not a repair).
    conversation_mark_read(conversation)
    settings_row = assistant_settings_get()
    window = page_selectors.chat_window(conversation, request.GET)
    context = _window_context(conversation, window, settings_row)
    newest = page_selectors.newest_messages(conversation, window)
    if window.has_more_after:
        stale_streams_read_as_interrupted(newest)
    return render(
        request,
        "chat/chat.html",
        {
            **context,
            "conversation": conversation,
            "settings_row": settings_row,
            "assistant_label": page_selectors.assistant_label(conversation, settings_row),
            "persona_label": Persona(conversation.persona).label,
            # Where chat.js scrolls on load: the message asked for, or the top for "Jump to start".
            "anchor_id": request.GET.get("around", ""),
            "at_start": bool(request.GET.get("start")) and not request.GET.get("around"),
            "diagnostics": page_selectors.latest_diagnostics(newest),
            # Request size details: the provider's own figures, beside the app's estimates.
            "provider_usage": page_selectors.latest_provider_usage(newest),
            "streaming": any(message.status == MessageStatus.STREAMING for message in newest),
            # Character Studio characters the owner may pin for one message.
            "characters": characters_list(),
            "visibility": chat_visibility(conversation),
            # A New Chat's handoff, said in a note that is no message ("Start without it" before the first send).
            "new_chat_handoff": new_chat_handoff_notice(conversation),
            # Seed 004: history this provider may not replay; Branch / Fresh Chat continues it.
            "provider_change": page_selectors.provider_change_for(conversation),
            # Compact / Undo and the labelled "Compacted summary" marker at its boundary.
            **page_selectors.compaction_context(conversation, newest, context["compaction"]),
            # A Past Conversation Search result the owner chose to use (`?quote=<message id>&q=…`).
            "composer_prefill": quoted_excerpt(message_id=request.GET["quote"], query=request.GET.get("q", ""))
            if request.GET.get("quote")
            else "",
        },
    )


@require_GET
def chat_window_fragment(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """Rendered bubbles of a live-branch window, for chat.js: `?before=<id>&limit=N` (earlier
    messages, as the owner scrolls up) or no cursor (the newest PAGE_WINDOW, "Jump to latest").
    The window's edges and the estimate outside it ride on the wrapper's data attributes."""
    conversation = access_conversation(conversation_id)
    page = message_paging.page_request(request.GET)
    if page is None:
        page = message_paging.PageRequest(limit=page_selectors.PAGE_WINDOW)
    window = message_window(conversation, limit=page.limit, before=page.before, around=page.around)
    response = render(request, "chat/_window.html", _window_context(conversation, window, assistant_settings_get()))
    response["Cache-Control"] = "no-store"
    return response
