"""The one provider request builder: every request the app makes of the model provider is built here.

Two steps, both here, and nothing reaches the provider any other way (tests/architecture/test_provider_calls.py):

1. What the owner's settings and the conversation ask of a request, `RequestOptions`:
   `request_options` for a reply, `compaction_request_options` for the Compact summary (which of the
   settings a summary takes: docs/provider.md, "One request builder").
2. The SDK call, `ProviderRequest`: the client method and its keyword arguments as the installed `openai`
   SDK types them, one builder per call the app makes (`responses_request`, `chat_request`,
   `image_request`, `transcription_request`, `speech_request`). `provider_call` sends one: the only place
   the SDK client is called.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import openai
from django.conf import settings
from django.utils.crypto import salted_hmac

from transcript.models import Conversation
from transcript.provider.config import DEFAULT_BASE_URL, ProviderConfig
from transcript.provider.wire import chat_messages, responses_input


def conversation_cache_key(conversation_id: object) -> str:
    """The conversation's `prompt_cache_key`: stable for all its sends, opaque (a keyed hash, never its id)."""
    return salted_hmac("elion.prompt-cache-key", str(conversation_id)).hexdigest()[:32]


@dataclass(frozen=True)
class RequestOptions:
    """Per-request wishes the owner's settings and the conversation decide (Chat Completions takes only the
    image detail and the cache retention)."""

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



class OwnerRequestSettings(Protocol):
    """What a request takes of the owner's settings row (`elion.models.AssistantSettings`, named by shape:
    the request builder needs these four fields, not the row)."""

    provider_store_responses: bool
    reasoning_effort: str
    verbosity: str
    reasoning_summary_shown: bool


def request_options(settings_row: OwnerRequestSettings, conversation: Conversation) -> RequestOptions:
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


def compaction_request_options(settings_row: OwnerRequestSettings, conversation: Conversation) -> RequestOptions:
    """What the Compact summary's request takes of a reply's: the owner's `store` choice, the reasoning
    effort, the conversation's prompt cache key and retention. Not the verbosity (the summary's length is
    its instruction's), nor a reasoning summary (nothing shows one for a compaction)."""
    return replace(request_options(settings_row, conversation), verbosity=None, reasoning_summary=False)


# --- The SDK call --------------------------------------------------------------------------------

# The SDK client methods the app calls, as a dotted path from the client.
ENDPOINTS = frozenset({
    "responses.create", "chat.completions.create", "images.generate", "audio.transcriptions.create",
    "audio.speech.create",
})

# WIRE_AS_IS: the conversation (Responses `input`, Chat Completions `messages`) is the one field that
# goes to the SDK as `extra_body`, which it serialises as given; every other field is a typed argument.
# As a typed argument the conversation would first pass through the SDK's params transform
# (`openai._utils._transform`), which walks every item against each member of the params' TypedDict
# unions (33 for a Responses input item, 6 for a chat message) to rename aliased keys and format dates or base64
# fields. Our wire items have none of those, so it returns them unchanged, but it costs CPU in
# proportion to the thread, all before the first token: for a 2,400-item window, 1,980 ms of the
# client's CPU to the first delta against 18 ms as `extra_body` (`bench/send_overhead.py --window 2400`,
# bench/results/send_overhead.md, 2026-12-03). The SDK offers no other way past it (a tuple would skip
# the walk only because the field is typed `List`, which a tuple is not). The items are built to the SDK's types
# all the same: tests/transcript/provider/test_gateway.py asks the SDK's own transform that it
# leaves every item shape unchanged, and the scripted provider checks every body against those types.
WIRE_AS_IS_FIELDS = frozenset({"input", "messages"})


@dataclass(frozen=True)
class ProviderRequest:
    """One provider call, built: the SDK client method (`endpoint`), its typed keyword arguments, and the
    conversation sent as-is (WIRE_AS_IS, `input` or `messages`; empty for the calls without one)."""

    endpoint: str
    params: dict[str, Any]
    conversation: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.endpoint not in ENDPOINTS:
            raise ValueError(f"unknown provider endpoint {self.endpoint!r}")
        if not set(self.conversation) <= WIRE_AS_IS_FIELDS:
            raise ValueError(f"only the conversation travels as-is, not {sorted(set(self.conversation) - WIRE_AS_IS_FIELDS)}")


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


async def provider_call(config: ProviderConfig, request: ProviderRequest) -> Any:  # noqa: ANN401 - the SDK's answer
    """Send one built request on the config's pooled client; the SDK's errors are the caller's to map."""
    method: Any = _client(config)
    for name in request.endpoint.split("."):
        method = getattr(method, name)
    as_is = {"extra_body": dict(request.conversation)} if request.conversation else {}
    return await method(**request.params, **as_is)


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


def _tool_spec(tool: dict[str, Any]) -> dict[str, Any]:
    return {"name": tool["name"], "description": tool.get("description", ""), "parameters": tool["parameters"]}


def is_builtin_tool(tool: dict[str, Any]) -> bool:
    """A provider built-in such as ``{"type": "web_search"}`` (Responses API only), not a function."""
    return tool.get("type", "function") != "function"


def responses_request(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: RequestOptions
) -> ProviderRequest:
    """One streamed Responses turn: the conversation, the tools offered, the options' fields."""
    web_search = any(t.get("type") == "web_search" for t in tools)
    params: dict[str, Any] = {"model": config.model, "stream": True, **responses_request_fields(options, web_search=web_search)}
    if tools:
        params["tools"] = [
            dict(t) if is_builtin_tool(t) else {"type": "function", **_tool_spec(t), "strict": False} for t in tools
        ]
    return ProviderRequest("responses.create", params, {"input": responses_input(messages, options.image_detail)})


def chat_request(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: RequestOptions
) -> ProviderRequest:
    """One streamed Chat Completions turn (its usage asked for); of the options only the prompt cache retention
    and the image detail apply. `messages` is a required argument: the wire list replaces the empty one."""
    params: dict[str, Any] = {
        "model": config.model, "messages": [], "stream": True, "stream_options": {"include_usage": True},
    }
    functions = [t for t in tools if not is_builtin_tool(t)]  # Chat Completions has no built-in tools
    if functions:
        params["tools"] = [{"type": "function", "function": _tool_spec(t)} for t in functions]
    if options.cache_retention:
        params["prompt_cache_retention"] = options.cache_retention
    return ProviderRequest("chat.completions.create", params, {"messages": chat_messages(messages, options.image_detail)})


async def responses_turn(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: RequestOptions
) -> Any:  # noqa: ANN401 - the SDK's event stream
    """One streamed Responses turn, built and sent (the Responses adapter reads the stream)."""
    return await provider_call(config, responses_request(config, messages, tools, options))


async def chat_turn(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: RequestOptions
) -> Any:  # noqa: ANN401 - the SDK's chunk stream
    """One streamed Chat Completions turn, built and sent (the Chat Completions adapter reads the stream)."""
    return await provider_call(config, chat_request(config, messages, tools, options))


def image_request(*, prompt: str, model: str) -> ProviderRequest:
    """One image from the Images API."""
    return ProviderRequest("images.generate", {"model": model, "prompt": prompt, "n": 1})


def transcription_request(
    *, data: bytes, filename: str, mime: str, model: str, language: str | None, stream: bool
) -> ProviderRequest:
    """The words of one recording (multipart: the file as a (name, bytes, type) tuple), streamed where the model can."""
    params: dict[str, Any] = {"file": (filename, data, mime), "model": model}
    if language:
        params["language"] = language
    if stream:
        params["stream"] = True
    return ProviderRequest("audio.transcriptions.create", params)


def speech_request(*, text: str, model: str, voice: str, instructions: str, response_format: str) -> ProviderRequest:
    """One piece of speech; `text` already cut to the API's input limit by the caller."""
    params: dict[str, Any] = {"model": model, "voice": voice, "input": text, "response_format": response_format}
    if instructions:
        params["instructions"] = instructions
    return ProviderRequest("audio.speech.create", params)
