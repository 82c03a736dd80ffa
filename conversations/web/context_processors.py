"""Values every page needs: the demo-provider banner, names, the sidebar.

The settings row and the sidebar are lazy, so a page that never shows them
(the login page, a JSON error) costs no query. The sidebar is only offered to
the owner: the public login page must not list conversation titles.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from conversations.services.visibility.selectors import sidebar_counts
from conversations.web.page_selectors import sidebar_groups
from elion.base import access
from elion.base.assistant_settings import assistant_settings_get
from transcript.models import Persona
from transcript.provider.audio import sdk_voices


def _is_owner(request: HttpRequest) -> bool:
    if not settings.ELION_PROTECTED:
        return True
    return bool(getattr(request, "elion_bearer", False) or access.owner_session_active(request))


def unread_in(sidebar: list) -> int:
    """The conversations of the sidebar Elion wrote in by itself since the owner last opened them (issue 44):
    the title bar's "(N)". Counted from the sidebar's rows, so it costs no statement of its own."""
    return sum(1 for group in sidebar for conversation in group.conversations if conversation.unread)


def elion(request: HttpRequest) -> dict:
    is_owner = _is_owner(request)
    sidebar = SimpleLazyObject(sidebar_groups) if is_owner else []
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
        "sidebar": sidebar,
        "unread_count": SimpleLazyObject(lambda: unread_in(sidebar)) if is_owner else 0,
        "sidebar_counts": SimpleLazyObject(sidebar_counts) if is_owner else {},
    }
