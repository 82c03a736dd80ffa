"""Settings → Voice: the voice settings' own form (`POST /settings/voice/`). Thin: the settings service."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from conversations.services.settings_writes import assistant_settings_update
from elion.base.errors import ServiceError

VOICE_TEXT_FIELDS = ("voice", "voice_instructions", "voice_language")
VOICE_FLAGS = ("read_aloud_auto", "keep_voice_recordings")


@require_POST
def voice_settings_save(request: HttpRequest) -> HttpResponse:
    changes: dict[str, object] = {name: request.POST[name] for name in VOICE_TEXT_FIELDS if name in request.POST}
    changes.update({name: request.POST.get(name) == "on" for name in VOICE_FLAGS})
    try:
        assistant_settings_update(**changes)
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Voice settings saved.")
    return redirect("/settings/#voice")
