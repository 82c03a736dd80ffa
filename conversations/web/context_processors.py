"""Values every page needs: the demo-provider banner, names, the sidebar.

The settings row and the sidebar are lazy, so a page that never shows them
(the login page, a JSON error) costs no query. The sidebar is only offered to
the owner: the public login page must not list conversation titles.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from conversations.models import Persona
from conversations.services.visibility.selectors import sidebar_counts
from conversations.web.page_selectors import sidebar_groups
from elion.base import access
from transcript.assistant_settings import assistant_settings_get
from transcript.provider.audio import sdk_voices


def _is_owner(request: HttpRequest) -> bool:
    if not settings.ELION_PROTECTED:
        return True
    return bool(getattr(request, "elion_bearer", False) or access.owner_session_active(request))


def elion(request: HttpRequest) -> dict:
    is_owner = _is_owner(request)
    return {
        "offline_demo": not settings.OPENAI_API_KEY,
        "elion_protected": settings.ELION_PROTECTED,
        "elion_model": settings.ELION_MODEL,
        "elion_is_owner": is_owner,
        "assistant": SimpleLazyObject(assistant_settings_get),
        "personas": Persona.choices,
        "private_chat_days": settings.ELION_PRIVATE_CHAT_DAYS,
        "voice_max_seconds": settings.ELION_VOICE_MAX_SECONDS,
        "speech_voices": sdk_voices(),
        "speech_model": settings.ELION_SPEECH_MODEL,
        "transcribe_model": settings.ELION_TRANSCRIBE_MODEL,
        "sidebar": SimpleLazyObject(sidebar_groups) if is_owner else [],
        "sidebar_counts": SimpleLazyObject(sidebar_counts) if is_owner else {},
    }
