"""The Responses API adapter: one streamed turn as neutral events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from transcript.provider.config import ProviderConfig
from transcript.provider.errors import scrubbed_message, stream_ended_early_error
from transcript.provider.events import (
    CitationFound,
    Completed,
    ImageGenerated,
    ImagePartial,
    ImageStarted,
    OutputItemDone,
    ProviderError,
    ProviderEvent,
    ReasoningDone,
    ReasoningSummaryDelta,
    RefusalDelta,
    TextDelta,
    ToolCallRequested,
    usage_detail,
)
from transcript.provider.request_builder import RequestOptions, responses_turn


def _url_citations(item: Any, start: int) -> list[CitationFound]:  # noqa: ANN401 - an SDK output message item
    """The `url_citation` annotations of a finished message item, offsets made relative to the stream's text
    (`start`: where the item's first text part began). Other annotation kinds are not citations."""
    found: list[CitationFound] = []
    for part in item.content or []:
        if getattr(part, "type", None) != "output_text":
            continue
        for annotation in part.annotations or []:
            if getattr(annotation, "type", None) != "url_citation":
                continue
            first, last = annotation.start_index, annotation.end_index
            if isinstance(first, int) and isinstance(last, int) and isinstance(annotation.url, str):
                found.append(CitationFound(annotation.url, str(annotation.title or ""), start + first, start + last))
        start += len(part.text or "")
    return found


async def responses_events(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: RequestOptions
) -> AsyncIterator[ProviderEvent]:
    """One Responses API turn as neutral events (the gateway's `stream_reply` retries and maps its SDK errors)."""
    stream = await responses_turn(config, messages, tools, options)
    streamed = 0  # characters of text so far: citation offsets are made relative to them
    message_starts: dict[str, int] = {}
    async with stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                streamed += len(event.delta)
                yield TextDelta(event.delta)
            elif event.type == "response.refusal.delta":
                streamed += len(event.delta)
                yield RefusalDelta(event.delta)
            elif event.type == "response.reasoning_summary_text.delta":
                yield ReasoningSummaryDelta(event.delta)
            elif event.type == "response.output_item.added" and event.item.type == "message":
                message_starts[event.item.id] = streamed
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                yield ToolCallRequested(event.item.call_id, event.item.name, event.item.arguments, event.item.id or "")
            elif event.type == "response.output_item.done" and event.item.type == "reasoning":
                summary = tuple(part.text for part in event.item.summary or [] if isinstance(part.text, str))
                yield ReasoningDone(event.item.id, event.item.encrypted_content or None, summary)
            elif event.type == "response.output_item.done" and event.item.type == "message":
                for citation in _url_citations(event.item, message_starts.get(event.item.id, streamed)):
                    yield citation
                yield OutputItemDone(_item_json(event.item))
            elif event.type == "response.output_item.done" and event.item.type == "web_search_call":
                yield OutputItemDone(_item_json(event.item))
            elif event.type == "response.output_item.added" and event.item.type == "image_generation_call":
                yield ImageStarted(event.item.id)
            elif event.type == "response.image_generation_call.partial_image":
                yield ImagePartial(event.item_id, event.partial_image_index, event.partial_image_b64)
            elif event.type == "response.output_item.done" and event.item.type == "image_generation_call":
                yield _image_generated(event.item, config.api_key)
                # Kept like the others, its image aside: that is the reply's content-addressed attachment
                # (`metadata.generated_images`, by `item_id`), never base64 in the row.
                yield OutputItemDone({k: v for k, v in _item_json(event.item).items() if k != "result"})
            elif event.type in ("response.completed", "response.incomplete"):
                usage = event.response.usage
                reason = _incomplete_reason(event.response) if event.type == "response.incomplete" else None
                yield (
                    Completed(
                        usage.input_tokens,
                        usage.output_tokens,
                        usage_detail(usage, "input_tokens_details", "cached_tokens"),
                        usage_detail(usage, "output_tokens_details", "reasoning_tokens"),
                        reason,
                    )
                    if usage
                    else Completed(None, None, incomplete_reason=reason)
                )
                return
            elif event.type in ("response.failed", "error"):
                err = event.response.error if event.type == "response.failed" else event
                detail = f"The model provider reported an error: {scrubbed_message(err, config.api_key)}."
                raise ProviderError("provider_http_error", detail)
    raise stream_ended_early_error()


def _incomplete_reason(response: Any) -> str:  # noqa: ANN401 - an SDK Response
    """Why the provider cut the reply off (`incomplete_details.reason`), "unknown" when it did not say."""
    details = getattr(response, "incomplete_details", None)
    return str(getattr(details, "reason", None) or "unknown")


def _item_json(item: Any) -> dict[str, Any]:  # noqa: ANN401 - an SDK output item
    """An output item as the provider sent it (the fields it set), as JSON."""
    return item.model_dump(mode="json", exclude_unset=True)


def _image_generated(item: Any, api_key: str | None) -> ImageGenerated:  # noqa: ANN401 - an SDK output item
    error = getattr(item, "error", None)
    words = scrubbed_message(error, api_key) if error is not None else ""
    if not words and item.status == "failed":
        words = "the image could not be generated"
    return ImageGenerated(
        item_id=item.id,
        result_b64=item.result if isinstance(item.result, str) and item.result else None,
        status=str(item.status),
        error=words,
        revised_prompt=str(getattr(item, "revised_prompt", None) or ""),
        error_code=str(getattr(error, "code", None) or ""),
    )
