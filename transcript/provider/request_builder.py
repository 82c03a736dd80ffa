"""The provider request builder: what the owner's settings and the conversation ask of a request."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from conversations.models import AssistantSettings, Conversation
from transcript.provider.config import conversation_cache_key


@dataclass(frozen=True)
class RequestOptions:
    """Per-request wishes the owner's settings and the conversation decide (Responses API only)."""

    # `store`: may the provider keep this response? Private by default.
    store: bool = False
    # `prompt_cache_key`: the same opaque key for every request of one conversation (prompt cache hits).
    cache_key: str | None = None
    # `reasoning.effort` and `text.verbosity`; None leaves the provider's default.
    reasoning_effort: str | None = None
    verbosity: str | None = None
    # `reasoning.summary: "auto"`: ask for a summary of the reasoning, streamed beside the reply.
    reasoning_summary: bool = False
    # `input_image.detail` on every image sent (docs/provider.md): "auto" lets the model choose.
    image_detail: str = "auto"
    # `prompt_cache_retention` ("in_memory" | "24h"); None leaves the provider's default (docs/provider.md).
    cache_retention: str | None = None



def request_options(settings_row: AssistantSettings, conversation: Conversation) -> RequestOptions:
    """What the owner's settings and this conversation ask of every Responses request of a reply."""
    return RequestOptions(
        store=settings_row.provider_store_responses,
        cache_key=conversation_cache_key(conversation.id),
        reasoning_effort=settings_row.reasoning_effort,
        verbosity=settings_row.verbosity,
        reasoning_summary=settings_row.reasoning_summary_shown,
        image_detail=settings.ELION_IMAGE_DETAIL,
        cache_retention=settings.ELION_PROMPT_CACHE_RETENTION or None,
    )
