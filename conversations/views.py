"""Server-rendered pages. Thin: every write goes through a service."""

from __future__ import annotations

from django.contrib.auth import login, logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from conversations import services
from conversations.models import Conversation
from conversations.settings_service import assistant_settings_get
from elion import access
from elion.errors import ServiceError


def home(request: HttpRequest) -> HttpResponse:
    latest = Conversation.objects.filter(trashed=False).first()
    if latest is not None:
        return redirect("chat", conversation_id=latest.id)
    return render(request, "chat/empty.html")


def login_page(request: HttpRequest) -> HttpResponse:
    error = ""
    if request.method == "POST":
        if access.check_owner_password(request.POST.get("password", "")):
            login(request, access.get_owner_user())
            target = request.GET.get("next") or "/"
            return redirect(target if target.startswith("/") and not target.startswith("//") else "/")
        error = "That password is not the owner's."
    return render(request, "login.html", {"error": error}, status=401 if error else 200)


@require_POST
def logout_page(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("login")


@require_POST
def new_chat(request: HttpRequest) -> HttpResponse:
    persona = request.POST.get("persona", "elion")
    try:
        conversation = services.conversation_create(persona=persona)
    except ServiceError as exc:
        return HttpResponse(exc.detail, status=exc.status)
    return redirect("chat", conversation_id=conversation.id)


def chat_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = services.access_conversation(conversation_id)
    return render(request, "chat/chat.html", {"conversation": conversation, "settings_row": assistant_settings_get()})


def settings_page(request: HttpRequest) -> HttpResponse:
    return render(request, "settings.html", {"settings_row": assistant_settings_get()})
