"""Folder pages: create, rename, hide or show, delete, and the list of hidden folders.

Thin: every write is a `conversations.services.threads` call; a refused action comes back as a
flash message on the page it came from.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from conversations.services.threads.thread_writes import folder_create, folder_delete, folder_update
from conversations.services.visibility import selectors as visibility_selectors
from conversations.web.redirects import back
from conversations.web.visibility.api import flag
from elion.base.errors import ServiceError
from transcript.access import access_folder


@require_POST
def folder_create_page(request: HttpRequest) -> HttpResponse:
    try:
        folder = folder_create(name=request.POST.get("name", ""))
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Folder “{folder.name}” created.")
    return back(request, "/")


@require_POST
def folder_visibility_page(request: HttpRequest, folder_id: int) -> HttpResponse:
    try:
        hidden = flag(request.POST.get("hidden"), "hidden")
        folder = folder_update(folder_id=folder_id, changes={"hidden": hidden})
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return back(request, "/folders/hidden/")
    if folder.hidden:
        messages.success(request, f"Folder “{folder.name}” is hidden: its conversations are out of automatic continuity.")
    else:
        messages.success(
            request,
            f"Folder “{folder.name}” is visible again. Its conversations are Continuity-Shielded until you release them.",
        )
    return back(request, "/folders/hidden/")


@require_POST
def folder_rename_page(request: HttpRequest, folder_id: int) -> HttpResponse:
    try:
        folder = folder_update(folder_id=folder_id, changes={"name": request.POST.get("name", "")})
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Folder renamed “{folder.name}”.")
    return back(request, "/")


def _conversations(n: int) -> str:
    return "its one conversation" if n == 1 else f"its {n} conversations"


@require_POST
def folder_delete_page(request: HttpRequest, folder_id: int) -> HttpResponse:
    """Delete a folder; the message says where its conversations went (seed: leaving a hidden folder shields)."""
    try:
        folder = access_folder(folder_id)
        moved = folder_delete(folder_id=folder_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
        return back(request, "/")
    if not moved:
        messages.success(request, f"Folder “{folder.name}” deleted. It held no conversations.")
    elif folder.hidden:
        messages.success(
            request,
            f"Folder “{folder.name}” deleted. {_conversations(moved).capitalize()} moved to Chats and left "
            "quarantine Continuity-Shielded: readable, but kept out of automatic continuity until you release "
            "each shield.",
        )
    else:
        messages.success(
            request, f"Folder “{folder.name}” deleted. {_conversations(moved).capitalize()} moved to Chats, unchanged."
        )
    return back(request, "/")


@require_GET
def hidden_folders_page(request: HttpRequest) -> HttpResponse:
    return render(request, "visibility/hidden_folders.html", {"groups": visibility_selectors.hidden_folders()})
