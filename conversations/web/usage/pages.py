"""Pages for provider-reported usage: Settings -> Usage, and the chat page's "Reported by the
provider" block as a fragment (fetched again by static/js/chat/usage.js when a reply settles).

Thin: the totals and the cost rule live in `operations.usage`.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from conversations.web import page_selectors
from operations import usage
from transcript.access import access_conversation
from transcript.branch_window import branch_window_newest


@require_GET
def usage_page(request: HttpRequest) -> HttpResponse:
    report = usage.usage_report()
    return render(
        request,
        "usage.html",
        {
            "report": report.as_dict(),
            "days": usage.DAYS_DEFAULT,
            "months": usage.MONTHS_DEFAULT,
        },
    )


@require_GET
def provider_usage_fragment(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = access_conversation(conversation_id)
    newest = page_selectors.visible_messages(
        branch_window_newest(conversation, limit=page_selectors.PAGE_WINDOW)
    )
    response = render(
        request, "chat/_provider_usage.html", {"provider_usage": page_selectors.latest_provider_usage(newest)}
    )
    response["Cache-Control"] = "no-store"
    return response
