"""The Chat Completions adapter: one streamed turn as neutral events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from transcript.provider.config import ProviderConfig
from transcript.provider.errors import stream_ended_early_error
from transcript.provider.events import (
    Completed,
    ProviderEvent,
    RefusalDelta,
    TextDelta,
    ToolCallRequested,
    usage_detail,
)
from transcript.provider.request_builder import RequestOptions, chat_turn

# Chat Completions finish reasons that mean the reply was cut off, not finished.
CHAT_CUT_OFF_REASONS = frozenset({"length", "content_filter"})


async def chat_events(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: RequestOptions
) -> AsyncIterator[ProviderEvent]:
    """One Chat Completions turn as neutral events (the gateway's `stream_reply` retries and maps its SDK errors)."""
    stream = await chat_turn(config, messages, tools, options)
    finished = False
    cut_off: str | None = None
    usage: tuple[int | None, int | None, int | None, int | None] = (None, None, None, None)
    calls: dict[int, list[str]] = {}  # index → [id, name, arguments so far]
    async with stream:
        async for chunk in stream:
            if chunk.usage is not None:
                usage = (
                    chunk.usage.prompt_tokens,
                    chunk.usage.completion_tokens,
                    usage_detail(chunk.usage, "prompt_tokens_details", "cached_tokens"),
                    usage_detail(chunk.usage, "completion_tokens_details", "reasoning_tokens"),
                )
            for choice in chunk.choices:
                if choice.delta.content:
                    yield TextDelta(choice.delta.content)
                if getattr(choice.delta, "refusal", None):
                    yield RefusalDelta(choice.delta.refusal)
                for tc in choice.delta.tool_calls or []:
                    slot = calls.setdefault(tc.index, ["", "", ""])
                    slot[0] = tc.id or slot[0]
                    if tc.function is not None:
                        slot[1] = tc.function.name or slot[1]
                        slot[2] += tc.function.arguments or ""
                finished = finished or choice.finish_reason is not None
                if choice.finish_reason in CHAT_CUT_OFF_REASONS:
                    cut_off = choice.finish_reason
    # Chat Completions has no explicit "completed" event: a finish_reason is the proof
    # the turn ended, since the SDK hides whether `[DONE]` arrived.
    if not finished:
        raise stream_ended_early_error()
    for index in sorted(calls):
        call_id, name, arguments = calls[index]
        yield ToolCallRequested(call_id, name, arguments)
    yield Completed(*usage, incomplete_reason=cut_off)
