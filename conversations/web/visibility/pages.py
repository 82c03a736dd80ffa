"""Pages for visibility and deliberate search: the trash, the conversation transitions, and
Past Conversation Search.

Thin: every write is a `conversations.services.visibility.transitions` (or `services`) call; a
refused action comes back as a flash message on the page it came from.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from continuity.rules.eligibility import outside_quarantine
from conversations.services.deletion import conversation_delete_forever
from conversations.services.threads.thread_writes import conversation_update
from conversations.services.visibility import selectors as visibility_selectors
from conversations.services.visibility import transitions as visibility
from conversations.services.visibility.past_search import past_conversation_search
from conversations.web.redirects import back
from conversations.web.visibility.api import flag, search_query
from elion.base.errors import ServiceError
from elion.base.fulltext import query_terms
from transcript.access import access_conversation
from transcript.models import Conversation


def _title(conversation: Conversation) -> str:
    return f"“{conversation.display_title}”"


@require_POST
def conversation_trash_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    try:
        conversation = visibility.conversation_trash(conversation_id=conversation_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return back(request, "/")
    messages.success(request, f"{_title(conversation)} is in the trash. It stays readable; restore it to send again.")
    return back(request, f"/c/{conversation.id}/")


@require_POST
def conversation_delete_forever_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    try:
        deletion = conversation_delete_forever(conversation_id=conversation_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return redirect("/trash/")
    if deletion.state == "complete":
        removed = deletion.counts.get("messages", 0)
        messages.success(request, f"Deleted forever: the conversation and its {removed} message(s) are gone.")
    else:
        messages.success(request, "Deleting forever: the conversation is gone from every list; its rows are "
                                  "being removed in the background.")
    return redirect("/trash/")


@require_POST
def conversation_restore_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    try:
        conversation = visibility.conversation_restore(conversation_id=conversation_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return back(request, "/trash/")
    messages.success(
        request,
        f"{_title(conversation)} is restored and Continuity-Shielded: it stays out of automatic continuity "
        "until you release the shield.",
    )
    return back(request, f"/c/{conversation.id}/")


@require_POST
def conversation_release_shield_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    try:
        conversation = visibility.conversation_shield_release(conversation_id=conversation_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return back(request, f"/c/{conversation_id}/")
    messages.success(request, f"Shield released: {_title(conversation)} feeds automatic continuity again.")
    return back(request, f"/c/{conversation.id}/")


@require_POST
def conversation_keep_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    try:
        conversation = visibility.conversation_keep(conversation_id=conversation_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return back(request, f"/c/{conversation_id}/")
    messages.success(
        request,
        f"{_title(conversation)} is kept: it is an ordinary conversation now, Continuity-Shielded until you "
        "release the shield.",
    )
    return back(request, f"/c/{conversation.id}/")


@require_POST
def conversation_move_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    folder_id = request.POST.get("folder_id") or None
    try:
        conversation = conversation_update(conversation_id=conversation_id, changes={"folder_id": folder_id})
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return back(request, f"/c/{conversation_id}/")
    where = f"the folder “{conversation.folder.name}”" if conversation.folder else "no folder"
    note = " It is Continuity-Shielded until you release it." if conversation.shielded else ""
    messages.success(request, f"Moved {_title(conversation)} to {where}.{note}")
    return back(request, f"/c/{conversation.id}/")


@require_GET
def trash_page(request: HttpRequest) -> HttpResponse:
    return render(request, "visibility/trash.html", {"conversations": visibility_selectors.trashed_conversations()})


def _insert_target(request: HttpRequest) -> Conversation | None:
    """The chat a result is inserted into: the one the search was opened from, else the latest."""
    origin = request.GET.get("from")
    if origin:
        try:
            conversation = access_conversation(origin)
        except ServiceError:
            conversation = None
        if conversation is not None and not conversation.trashed:
            return conversation
    return outside_quarantine().first()


@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    raw_query = request.GET.get("q", "")
    error, groups, status = "", [], 200
    include_shielded = include_private = False
    try:
        include_shielded = flag(request.GET.get("include_shielded"), "include_shielded")
        include_private = flag(request.GET.get("include_private"), "include_private")
        if raw_query.strip():
            hits = past_conversation_search(
                search_query(raw_query), include_shielded=include_shielded, include_private=include_private
            )
            for hit in hits:
                if not groups or groups[-1]["conversation_id"] != hit.conversation_id:
                    groups.append(
                        {"conversation_id": hit.conversation_id, "title": hit.conversation_title,
                         "shielded": hit.shielded, "private": hit.private, "hits": []}
                    )
                groups[-1]["hits"].append(hit)
    except ServiceError as exc:
        error, status = exc.detail, exc.status
    return render(
        request,
        "search/search.html",
        {
            "query": raw_query,
            # The query's words, marked in each excerpt (archive/templatetags/search_marks.py).
            "terms": query_terms(raw_query[:500]),
            "include_shielded": include_shielded,
            "include_private": include_private,
            "groups": groups,
            "searched": bool(raw_query.strip()) and not error,
            "error": error,
            "target": _insert_target(request),
            "origin": request.GET.get("from", ""),
        },
        status=status,
    )
