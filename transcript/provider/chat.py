"""The Chat Completions adapter: one streamed turn as neutral events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from transcript.provider.config import ProviderConfig, _client
from transcript.provider.errors import _lost
from transcript.provider.events import Completed, ProviderEvent, RefusalDelta, TextDelta, ToolCallRequested
from transcript.provider.request_builder import RequestOptions
from transcript.provider.responses import _detail, _is_builtin, _tool_spec
from transcript.provider.wire import chat_messages

# Chat Completions finish reasons that mean the reply was cut off, not finished.
CHAT_CUT_OFF_REASONS = frozenset({"length", "content_filter"})


async def _stream_chat(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: RequestOptions
) -> AsyncIterator[ProviderEvent]:
    extra: dict[str, Any] = {}
    functions = [t for t in tools if not _is_builtin(t)]  # Chat Completions has no built-in tools
    if functions:
        extra["tools"] = [{"type": "function", "function": _tool_spec(t)} for t in functions]
    wire = chat_messages(messages, options.image_detail)
    retention = {"prompt_cache_retention": options.cache_retention} if options.cache_retention else {}
    # `messages` is a required argument; the wire list replaces the empty one (see WIRE_AS_IS).
    stream = await _client(config).chat.completions.create(
        model=config.model,
        messages=[],
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"messages": wire, **retention},
        **extra,
    )
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
                    _detail(chunk.usage, "prompt_tokens_details", "cached_tokens"),
                    _detail(chunk.usage, "completion_tokens_details", "reasoning_tokens"),
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
        raise _lost()
    for index in sorted(calls):
        call_id, name, arguments = calls[index]
        yield ToolCallRequested(call_id, name, arguments)
    yield Completed(*usage, incomplete_reason=cut_off)
