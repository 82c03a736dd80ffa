"""Values every page needs: the demo-provider banner and names."""

from __future__ import annotations

from django.conf import settings


def elion(request) -> dict:
    return {
        "offline_demo": not settings.OPENAI_API_KEY,
        "elion_protected": settings.ELION_PROTECTED,
        "elion_model": settings.ELION_MODEL,
    }
