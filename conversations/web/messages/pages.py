"""One message for the chat page: its rendered bubble (swapped in when a stream ends) and its Markdown
(for Copy).
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from conversations.web import page_selectors
from elion.base.assistant_settings import assistant_settings_get
from transcript.access import access_conversation, message_in_conversation
from transcript.leases import stale_streams_read_as_interrupted


@require_GET
def message_markdown(request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
    """A message's text exactly as written (its Markdown), for the bubble's Copy."""
    conversation = access_conversation(conversation_id)
    message = message_in_conversation(conversation, message_id)
    if message.role not in page_selectors.VISIBLE_ROLES:
        raise Http404("That message is not shown in the transcript.")
    response = HttpResponse(message.content, content_type="text/markdown; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def message_fragment(request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
    """One rendered bubble, swapped in by chat.js when a stream ends."""
    conversation = access_conversation(conversation_id)
    message = message_in_conversation(conversation, message_id)
    if message.role not in page_selectors.VISIBLE_ROLES:
        raise Http404("That message is not shown in the transcript.")
    stale_streams_read_as_interrupted([message])
    (bubble,) = page_selectors.bubbles_for(conversation, [message], assistant_settings_get())
    template = "chat/_handoff_bubble.html" if bubble.is_handoff else "chat/_message.html"
    response = render(request, template, {"bubble": bubble})
    response["X-Message-Status"] = message.status
    response["Cache-Control"] = "no-store"
    return response
