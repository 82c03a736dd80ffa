"""The app's only path to the language model.

The settings layer builds a ``ProviderConfig``, the request builder
(`request_builder`) every request, and callers consume neutral events, so the
rest of the app never sees SDK types; no database access, so this module can be
tested against a loopback server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import openai

from transcript.provider.chat import CHAT_CUT_OFF_REASONS, chat_events
from transcript.provider.config import (
    DEFAULT_BASE_URL,
    OFFLINE_ROUTE,
    ProviderBinding,
    ProviderConfig,
    normalise_route,
    route_fingerprint,
)
from transcript.provider.demo import offline_demo_events
from transcript.provider.errors import REASONING_REJECTED_CODE, provider_error_from
from transcript.provider.events import (
    CitationFound,
    Completed,
    ImageGenerated,
    ImagePartial,
    ImageStarted,
    OutputItemDone,
    ProviderError,
    ProviderEvent,
    ProviderWaiting,
    ReasoningDone,
    ReasoningSummaryDelta,
    RefusalDelta,
    TextDelta,
    ToolCallRequested,
)
from transcript.provider.images import IMAGE_REFUSED_CODES, GeneratedImage, image_generate
from transcript.provider.request_builder import (
    REASONING_INCLUDE,
    WEB_SEARCH_SOURCES_INCLUDE,
    RequestOptions,
    conversation_cache_key,
    responses_request_fields,
)
from transcript.provider.responses import responses_events

# The entry point callers import from; the names below live in the modules by job
# (config, events, errors, responses, chat, images, demo) and are re-exported here.
__all__ = [
    "CHAT_CUT_OFF_REASONS",
    "DEFAULT_BASE_URL",
    "IMAGE_REFUSED_CODES",
    "MAX_PROVIDER_RETRIES",
    "OFFLINE_ROUTE",
    "REASONING_INCLUDE",
    "REASONING_REJECTED_CODE",
    "RETRY_BUDGET_SECONDS",
    "WEB_SEARCH_SOURCES_INCLUDE",
    "CitationFound",
    "Completed",
    "GeneratedImage",
    "ImageGenerated",
    "ImagePartial",
    "ImageStarted",
    "OutputItemDone",
    "ProviderBinding",
    "ProviderConfig",
    "ProviderError",
    "ProviderEvent",
    "ProviderWaiting",
    "ReasoningDone",
    "ReasoningSummaryDelta",
    "RefusalDelta",
    "RequestOptions",
    "TextDelta",
    "ToolCallRequested",
    "conversation_cache_key",
    "image_generate",
    "normalise_route",
    "responses_request_fields",
    "route_fingerprint",
    "stream_reply",
]

# Retries that respect the provider: only before the first token, only when it says when
# (Retry-After / retry-after-ms), at most twice and 20 s in all; after the first token, never.
MAX_PROVIDER_RETRIES = 2
RETRY_BUDGET_SECONDS = 20.0


def _retry_delay(exc: openai.APIError) -> float | None:
    """Seconds the provider asked us to wait before trying again, or None when this is not a retry."""
    if not isinstance(exc, openai.APIStatusError) or not (exc.status_code == 429 or exc.status_code >= 500):
        return None
    headers = exc.response.headers
    try:
        if headers.get("retry-after-ms") is not None:
            seconds = float(headers["retry-after-ms"]) / 1000
        elif headers.get("retry-after") is not None:
            seconds = float(headers["retry-after"])
        else:
            return None
    except ValueError:
        return None  # an HTTP date or junk: not worth waiting on
    return seconds if 0 <= seconds <= RETRY_BUDGET_SECONDS else None


async def stream_reply(
    config: ProviderConfig,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    options: RequestOptions,
) -> AsyncIterator[ProviderEvent]:
    """Stream one model turn as neutral events; raises ProviderError on any failure.

    `options` has no default: a caller takes them from the request builder (`request_options`,
    `compaction_request_options`), so no request goes out without the conversation's settings."""
    if not config.api_key:
        async for event in offline_demo_events(messages):
            yield event
        return
    if config.api_selector not in ("responses", "chat.completions"):
        raise ProviderError("provider_bad_request", f"Unknown API selector {config.api_selector!r}.")
    waited = 0.0
    for attempt in range(MAX_PROVIDER_RETRIES + 1):
        started = False
        try:
            if config.api_selector == "responses":
                source = responses_events(config, messages, tools or [], options)
            else:
                source = chat_events(config, messages, tools or [], options)
            async for event in source:
                started = True
                yield event
            return
        except openai.APIError as exc:
            delay = None if started or attempt == MAX_PROVIDER_RETRIES else _retry_delay(exc)
            if delay is None or waited + delay > RETRY_BUDGET_SECONDS:
                raise provider_error_from(exc, config.api_key or "") from exc
        # Nothing reached the owner yet: say so, honour the provider's Retry-After, ask again.
        yield ProviderWaiting(delay)
        await asyncio.sleep(delay)
        waited += delay
