"""The Character Studio page. Thin: every write goes through `conversations.services.characters`."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from conversations.services import characters
from elion.base.errors import ServiceError

FIELDS = characters.EDITABLE_FIELDS
REBUILD_NOTE = "Every conversation's stored prompt lists the saved characters, so it was refreshed too."


def characters_page(request: HttpRequest) -> HttpResponse:
    error, draft, status = "", {}, 200
    if request.method == "POST":
        draft = {name: request.POST.get(name, "") for name in FIELDS}
        try:
            character = characters.character_create(**draft)
        except ServiceError as exc:
            error, status = exc.detail, exc.status
        else:
            messages.success(request, f"Saved {character.name}. {REBUILD_NOTE}")
            return redirect("characters")
    context = {"characters": characters.characters_list(), "error": error, "draft": draft}
    return render(request, "characters/list.html", context, status=status)


def character_edit_page(request: HttpRequest, character_id: int) -> HttpResponse:
    character = characters.access_character(character_id)
    error, status = "", 200
    if request.method == "POST":
        changes = {name: request.POST.get(name, "") for name in FIELDS}
        try:
            characters.character_edit(character_id=character.pk, changes=changes)
        except ServiceError as exc:
            error, status = exc.detail, exc.status
            for name, value in changes.items():
                setattr(character, name, value)
        else:
            messages.success(request, f"Updated {changes['name'].strip()}. {REBUILD_NOTE}")
            return redirect("characters")
    context = {"character": character, "error": error, "gallery": characters.character_gallery(character)}
    return render(request, "characters/edit.html", context, status=status)


@require_POST
def character_delete_page(request: HttpRequest, character_id: int) -> HttpResponse:
    character = characters.access_character(character_id)
    characters.character_delete(character_id=character.pk)
    messages.success(request, f"Deleted {character.name}. {REBUILD_NOTE}")
    return redirect("characters")
