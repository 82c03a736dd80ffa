"""The app's only path to the language model.

Pure Python on purpose (no Django imports): the settings layer builds a
``ProviderConfig`` and callers consume neutral events, so the rest of the app
never sees SDK types, and this module can be tested against a loopback server.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import openai
from django.utils.crypto import salted_hmac

from conversations.provider.wire import chat_messages, content_text, responses_input
from elion.redaction import redact_secret

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OFFLINE_ROUTE = "offline-demo"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class ProviderBinding:
    """Recorded on every durable message: which provider/route produced it."""

    provider_id: str
    provider_type: str
    model: str
    route_fingerprint: str


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


@dataclass(frozen=True)
class ProviderConfig:
    provider_id: str  # e.g. "openai"
    api_selector: str  # "responses" | "chat.completions"
    model: str  # logical model, e.g. "gpt-5.5"
    base_url: str | None  # None → DEFAULT_BASE_URL
    api_key: str | None  # None/"" → offline demo provider
    deployment: str = ""  # e.g. an Azure-style deployment name; part of the route
    timeout_seconds: float = 120.0

    @property
    def provider_type(self) -> str:
        return "openai" if self.api_key else "offline-demo"

    def binding(self) -> ProviderBinding:
        if self.api_key:
            fingerprint = route_fingerprint(self.base_url, self.deployment, self.api_selector)
        else:
            fingerprint = _digest(OFFLINE_ROUTE)
        return ProviderBinding(self.provider_id, self.provider_type, self.model, fingerprint)


def normalise_route(base_url: str | None) -> str:
    """Canonical form of a base URL, so cosmetic differences don't change the route."""
    parts = urlsplit((base_url or DEFAULT_BASE_URL).strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()  # hostname already drops userinfo
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    port = parts.port
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"  # query/fragment dropped


def route_fingerprint(base_url: str | None, deployment: str, api_selector: str) -> str:
    """Identify where requests go. Never includes the key, so rotating it keeps the binding."""
    return _digest("\n".join((normalise_route(base_url), deployment.strip(), api_selector)))


def _digest(route: str) -> str:
    return hashlib.sha256(route.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallRequested:
    call_id: str
    name: str
    arguments_json: str
    item_id: str = ""  # the Responses `function_call` item's own id (`fc_…`), replayed with it; "" on Chat


@dataclass(frozen=True)
class ReasoningSummaryDelta:
    """A piece of the provider's summary of its reasoning, streamed before the reply (never speech)."""

    text: str


@dataclass(frozen=True)
class ReasoningDone:
    """One finished reasoning output item: opaque encrypted content (None when the provider sent none)
    and its summary texts. Carried back, in its place, in later requests (`reasoning_message`)."""

    item_id: str
    encrypted_content: str | None
    summary: tuple[str, ...]


@dataclass(frozen=True)
class CitationFound:
    """A `url_citation` annotation; `start`/`end` are offsets into the text this request streamed."""

    url: str
    title: str
    start: int
    end: int


@dataclass(frozen=True)
class RefusalDelta:
    """A piece of a `refusal` content part: the model declined, and says so in these words."""

    text: str


@dataclass(frozen=True)
class OutputItemDone:
    """One finished Responses output item kept verbatim for replay (`message`, `web_search_call`):
    the provider's own JSON of it, in the order it came."""

    item: dict[str, Any]


@dataclass(frozen=True)
class Completed:
    """The turn ended; the provider's own usage figures (None where it reported none).

    `incomplete_reason`: the provider cut the reply off (Responses `incomplete_details.reason`,
    Chat Completions `finish_reason` `length` / `content_filter`); None when it finished."""

    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    incomplete_reason: str | None = None


@dataclass(frozen=True)
class ImageStarted:
    """The provider's built-in image tool began an image (Responses `image_generation_call` in progress)."""

    item_id: str


@dataclass(frozen=True)
class ImagePartial:
    """A partial image of one still being generated: a preview only, never stored."""

    item_id: str
    index: int
    b64: str


@dataclass(frozen=True)
class ImageGenerated:
    """A finished `image_generation_call` output item: the image as base64 (None when there is none),
    its status, the provider's words and code when it failed or refused (else ""), and its revised prompt."""

    item_id: str
    result_b64: str | None
    status: str
    error: str
    revised_prompt: str
    error_code: str = ""


@dataclass(frozen=True)
class ProviderWaiting:
    """The provider asked us to come back (429 or 5xx with Retry-After) before the first token."""

    seconds: float


ProviderEvent = (
    TextDelta | ToolCallRequested | Completed | ProviderWaiting | ReasoningSummaryDelta | ReasoningDone | CitationFound
    | ImageStarted | ImagePartial | ImageGenerated | RefusalDelta | OutputItemDone
)

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


class ProviderError(Exception):
    """A failure a person can read; ``code`` is stable, ``detail`` never contains the key."""

    def __init__(self, code: str, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status


# One client per (event loop, base_url, key, timeout): reuses the HTTP pool across sends,
# but never shares sockets between loops (async_to_sync / tests each run their own loop,
# and a pooled connection from a closed loop fails). The weak map drops dead loops.
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, float], openai.AsyncOpenAI]]
_CLIENTS = weakref.WeakKeyDictionary()


def _client(config: ProviderConfig) -> openai.AsyncOpenAI:
    key = (config.base_url or DEFAULT_BASE_URL, config.api_key or "", config.timeout_seconds)
    per_loop = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        # max_retries=0: the caller decides about retries; hidden SDK retries would
        # double-bill and delay error reporting.
        per_loop[key] = openai.AsyncOpenAI(api_key=key[1], base_url=key[0], max_retries=0, timeout=key[2])
    return per_loop[key]


async def stream_reply(
    config: ProviderConfig,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    options: RequestOptions = RequestOptions(),  # noqa: B008 - frozen, so one shared default is safe
) -> AsyncIterator[ProviderEvent]:
    """Stream one model turn as neutral events; raises ProviderError on any failure."""
    if not config.api_key:
        async for event in _offline_demo(messages):
            yield event
        return
    if config.api_selector not in ("responses", "chat.completions"):
        raise ProviderError("provider_bad_request", f"Unknown API selector {config.api_selector!r}.")
    waited = 0.0
    for attempt in range(MAX_PROVIDER_RETRIES + 1):
        started = False
        try:
            if config.api_selector == "responses":
                source = _stream_responses(config, messages, tools or [], options)
            else:
                source = _stream_chat(config, messages, tools or [], options)
            async for event in source:
                started = True
                yield event
            return
        except openai.APIError as exc:
            delay = None if started or attempt == MAX_PROVIDER_RETRIES else _retry_delay(exc)
            if delay is None or waited + delay > RETRY_BUDGET_SECONDS:
                raise _map_error(exc, config.api_key or "") from exc
        # Nothing reached the owner yet: say so, honour the provider's Retry-After, ask again.
        yield ProviderWaiting(delay)
        await asyncio.sleep(delay)
        waited += delay


# WIRE_AS_IS: the conversation (Responses `input`, Chat Completions `messages`)
# goes to the SDK as `extra_body`, which it serialises as given. As a typed
# argument it would first pass through the SDK's params transform, which walks
# every item and string against the params' TypedDict unions to rename aliased
# keys and format dates or base64 fields. Our wire items have none of those,
# so the transform returns them unchanged, but it costs 9 ms of CPU before a
# 23-item request leaves (bench/README.md), more as a thread grows, all of it
# before the first token. `tests/conversations/provider/test_gateway.py`
# checks the SDK's own transform leaves every item shape we send unchanged.


def _tool_spec(tool: dict[str, Any]) -> dict[str, Any]:
    return {"name": tool["name"], "description": tool.get("description", ""), "parameters": tool["parameters"]}


def _is_builtin(tool: dict[str, Any]) -> bool:
    """A provider built-in such as ``{"type": "web_search"}`` (Responses API only), not a function."""
    return tool.get("type", "function") != "function"


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


def _detail(usage: object, group: str, name: str) -> int | None:
    """One figure of a usage object's details (`input_tokens_details.cached_tokens`…), None when absent."""
    value = getattr(getattr(usage, group, None), name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def conversation_cache_key(conversation_id: object) -> str:
    """The conversation's `prompt_cache_key`: stable for all its sends, opaque (a keyed hash, never its id)."""
    return salted_hmac("elion.prompt-cache-key", str(conversation_id)).hexdigest()[:32]


# Every Responses request: the provider keeps nothing unless the owner allows it (`store`), and
# reasoning comes back encrypted (`include`), the only form that can be carried with `store: false`.
REASONING_INCLUDE = ["reasoning.encrypted_content"]
# With web search offered, the sources each search read come back on its `web_search_call` item too.
WEB_SEARCH_SOURCES_INCLUDE = "web_search_call.action.sources"


def responses_request_fields(options: RequestOptions, *, web_search: bool = False) -> dict[str, Any]:
    """The owner's and the conversation's wishes as Responses request fields."""
    include = [*REASONING_INCLUDE, WEB_SEARCH_SOURCES_INCLUDE] if web_search else REASONING_INCLUDE
    fields: dict[str, Any] = {"store": options.store, "include": include}
    if options.cache_key:
        fields["prompt_cache_key"] = options.cache_key
    if options.cache_retention:
        fields["prompt_cache_retention"] = options.cache_retention
    reasoning: dict[str, str] = {}
    if options.reasoning_effort:
        reasoning["effort"] = options.reasoning_effort
    if options.reasoning_summary:
        reasoning["summary"] = "auto"
    if reasoning:
        fields["reasoning"] = reasoning
    if options.verbosity:
        fields["text"] = {"verbosity": options.verbosity}
    return fields


async def _stream_responses(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: RequestOptions
) -> AsyncIterator[ProviderEvent]:
    extra: dict[str, Any] = {}
    if tools:
        extra["tools"] = [
            dict(t) if _is_builtin(t) else {"type": "function", **_tool_spec(t), "strict": False} for t in tools
        ]
    items = responses_input(messages, options.image_detail)
    web_search = any(t.get("type") == "web_search" for t in tools)
    fields = responses_request_fields(options, web_search=web_search)
    stream = await _client(config).responses.create(
        model=config.model, stream=True, extra_body={"input": items, **fields}, **extra
    )
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
                        _detail(usage, "input_tokens_details", "cached_tokens"),
                        _detail(usage, "output_tokens_details", "reasoning_tokens"),
                        reason,
                    )
                    if usage
                    else Completed(None, None, incomplete_reason=reason)
                )
                return
            elif event.type in ("response.failed", "error"):
                err = event.response.error if event.type == "response.failed" else event
                detail = f"The model provider reported an error: {_clip(err, config.api_key)}."
                raise ProviderError("provider_http_error", detail)
    raise _lost()


def _incomplete_reason(response: Any) -> str:  # noqa: ANN401 - an SDK Response
    """Why the provider cut the reply off (`incomplete_details.reason`), "unknown" when it did not say."""
    details = getattr(response, "incomplete_details", None)
    return str(getattr(details, "reason", None) or "unknown")


def _item_json(item: Any) -> dict[str, Any]:  # noqa: ANN401 - an SDK output item
    """An output item as the provider sent it (the fields it set), as JSON."""
    return item.model_dump(mode="json", exclude_unset=True)


def _image_generated(item: Any, api_key: str | None) -> ImageGenerated:  # noqa: ANN401 - an SDK output item
    error = getattr(item, "error", None)
    words = _clip(error, api_key) if error is not None else ""
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


@dataclass(frozen=True)
class GeneratedImage:
    """What the Images API answered for one image: its base64 (None when it sent none) and revised prompt."""

    b64: str | None
    revised_prompt: str


# The provider's codes for an image prompt (or image) its content policy refuses.
IMAGE_REFUSED_CODES = frozenset({"moderation_blocked", "content_policy_violation", "content_filter"})


async def image_generate(config: ProviderConfig, *, prompt: str, model: str) -> GeneratedImage:
    """One image from the Images API (`images.generate`) on the conversation's own binding
    (the same base URL, key and client as its replies); raises ProviderError on any failure,
    `image_refused` when the provider's content policy refused it."""
    if not config.api_key:
        raise ProviderError(
            "image_generation_unavailable", "Images need a model provider; none is configured (offline demo)."
        )
    try:
        answer = await _client(config).images.generate(model=model, prompt=prompt, n=1)
    except openai.APIError as exc:
        raise _map_image_error(exc, config.api_key) from exc
    data = answer.data or []
    if not data:
        raise ProviderError("image_missing", "The model provider answered without an image.")
    first = data[0]
    return GeneratedImage(b64=first.b64_json or None, revised_prompt=first.revised_prompt or "")


def _map_image_error(exc: openai.APIError, api_key: str) -> ProviderError:
    body = exc.body if isinstance(exc, openai.APIStatusError) and isinstance(exc.body, dict) else {}
    if _status_of(exc) == 400 and body.get("code") in IMAGE_REFUSED_CODES:
        message = body.get("message")
        detail = "The model provider refused to make this image (content policy)"
        detail += f": {_clip(message, api_key)}." if message else "."
        return ProviderError("image_refused", detail, 400)
    return _map_error(exc, api_key)


def _status_of(exc: openai.APIError) -> int | None:
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None


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


async def _offline_demo(messages: list[dict[str, Any]]) -> AsyncIterator[ProviderEvent]:
    """Deterministic, clearly labelled stand-in so the app works without a key."""
    said = next((content_text(m.get("content")) for m in reversed(messages) if m["role"] == "user"), "")
    text = f"(Offline demo — no OPENAI_API_KEY is set.) You said: {said[:200]}"
    for piece in re.findall(r"\s*\S+", text):
        await asyncio.sleep(0.02)  # paced like a real stream so the UI path is exercised
        yield TextDelta(piece)
    yield Completed(None, None)


def _lost() -> ProviderError:
    return ProviderError("provider_connection_lost", "The model provider's stream ended before the reply finished.")


def _clip(value: object, api_key: str | None) -> str:
    """Provider messages may quote (part of) the key; scrub before showing them (and before clipping)."""
    text = str(getattr(value, "message", None) or value)
    return redact_secret(text, api_key)[:200].rstrip(".")


# The provider's code for a reasoning item it cannot decrypt (another key or model produced it).
REASONING_REJECTED_CODE = "invalid_encrypted_content"


def _map_error(exc: openai.APIError, api_key: str) -> ProviderError:
    if isinstance(exc, openai.APITimeoutError):  # subclass of APIConnectionError: check first
        return ProviderError("provider_timeout", "The model provider did not answer in time.")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError("provider_connection_lost", "The connection to the model provider was lost.")
    if not isinstance(exc, openai.APIStatusError):
        return ProviderError("provider_http_error", f"The model provider reported an error: {_clip(exc, api_key)}.")
    status = exc.status_code
    error_code = exc.body.get("code") if isinstance(exc.body, dict) else None
    if status == 400 and error_code == REASONING_REJECTED_CODE:
        return ProviderError(
            "provider_reasoning_rejected", "The model provider could not verify the reasoning carried from earlier.", status
        )
    if status == 429:
        code, what = "provider_rate_limited", "is rate limiting requests"
    elif status in (401, 403):
        code, what = "provider_auth_failed", "rejected the API credentials"
    elif 400 <= status < 500:
        code, what = "provider_bad_request", "rejected the request"
    else:
        code, what = "provider_http_error", "failed"
    message = exc.body.get("message") if isinstance(exc.body, dict) else None
    detail = f"The model provider {what} (HTTP {status})"
    detail += f": {_clip(message, api_key)}." if message else "."
    return ProviderError(code, detail, status)
