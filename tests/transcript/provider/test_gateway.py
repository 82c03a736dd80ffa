"""The provider gateway against a real loopback ScriptedProvider and the real openai SDK.

Run without Django: ``.venv/bin/python -m pytest tests/provider -q -p no:django``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_provider import ScriptedProvider, ScriptedReply
from transcript.provider import gateway as gw
from transcript.provider import request_builder, wire
from transcript.provider.gateway import (
    Completed,
    ProviderConfig,
    ProviderError,
    RequestOptions,
    TextDelta,
    ToolCallRequested,
    route_fingerprint,
    stream_reply,
)

pytestmark = pytest.mark.timeout(30)

SELECTORS = ["responses", "chat.completions"]
KEY = "sk-test-0123456789abcdef"
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Look up the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider() as server:
        yield server


def config_for(provider: ScriptedProvider, selector: str, **overrides: Any) -> ProviderConfig:
    values: dict[str, Any] = {
        "provider_id": "openai",
        "api_selector": selector,
        "model": "gpt-5.5",
        "base_url": provider.base_url,
        "api_key": KEY,
    }
    return ProviderConfig(**{**values, **overrides})


async def collect(
    config: ProviderConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> list[Any]:
    return [event async for event in stream_reply(config, messages, tools, RequestOptions())]


async def collect_until_error(
    config: ProviderConfig, messages: list[dict[str, Any]]
) -> tuple[list[Any], ProviderError]:
    events: list[Any] = []
    with pytest.raises(ProviderError) as info:
        async for event in stream_reply(config, messages, None, RequestOptions()):
            events.append(event)
    return events, info.value


CHAT = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hello?"}]


# --- streaming text -----------------------------------------------------------------


@pytest.mark.asyncio
async def test_responses_selector_streams_deltas_and_sends_system_prompt_as_input_item(provider: ScriptedProvider):
    provider.script(ScriptedReply(chunks=["Hi", " there", "!"], usage={"input_tokens": 11, "output_tokens": 3}))
    events = await collect(config_for(provider, "responses"), CHAT)

    *deltas, item, completed = events
    assert deltas == [TextDelta("Hi"), TextDelta(" there"), TextDelta("!")]
    assert completed == Completed(11, 3, cached_input_tokens=0, reasoning_tokens=0)  # the Responses API reports its details
    # The message output item, as the provider sent it, for replay in place (issue 31).
    assert isinstance(item, gw.OutputItemDone) and item.item["type"] == "message" and item.item["id"].startswith("msg_")
    assert item.item["content"][0]["text"] == "Hi there!"
    request = provider.last_request()
    assert request is not None and request.path == "/v1/responses"
    assert request.body["model"] == "gpt-5.5"
    assert request.body["stream"] is True
    assert request.body["input"] == [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hello?"}]
    assert "instructions" not in request.body
    assert request.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.asyncio
async def test_chat_completions_selector_streams_deltas_and_asks_for_usage(provider: ScriptedProvider):
    provider.script(ScriptedReply(chunks=["Hi", " there"], usage={"input_tokens": 7, "output_tokens": 2}))
    events = await collect(config_for(provider, "chat.completions"), CHAT)

    assert events == [TextDelta("Hi"), TextDelta(" there"), Completed(7, 2)]
    request = provider.last_request()
    assert request is not None and request.path == "/v1/chat/completions"
    assert request.body["model"] == "gpt-5.5"
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["messages"] == CHAT


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_empty_script_falls_back_to_default_reply_so_long_runs_never_starve(
    provider: ScriptedProvider, selector: str
):
    events = await collect(config_for(provider, selector), CHAT)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Scripted reply."
    assert isinstance(events[-1], Completed)


# --- tool calls -------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_tool_call_is_reported_once_with_reassembled_arguments(provider: ScriptedProvider, selector: str):
    provider.script(ScriptedReply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Oslo"}, "call_id": "c1"}]))
    events = await collect(config_for(provider, selector), CHAT, tools=[WEATHER_TOOL])

    calls = [e for e in events if isinstance(e, ToolCallRequested)]
    assert [(c.call_id, c.name, json.loads(c.arguments_json)) for c in calls] == [
        ("c1", "get_weather", {"city": "Oslo"})
    ]
    assert not any(isinstance(e, TextDelta) for e in events)
    assert isinstance(events[-1], Completed)


@pytest.mark.asyncio
async def test_responses_tools_are_sent_as_flat_function_tools(provider: ScriptedProvider):
    await collect(config_for(provider, "responses"), CHAT, tools=[WEATHER_TOOL])
    request = provider.last_request()
    assert request is not None
    assert request.body["tools"] == [{"type": "function", **WEATHER_TOOL, "strict": False}]


@pytest.mark.asyncio
async def test_chat_tools_are_sent_wrapped_in_function_objects(provider: ScriptedProvider):
    await collect(config_for(provider, "chat.completions"), CHAT, tools=[WEATHER_TOOL])
    request = provider.last_request()
    assert request is not None
    assert request.body["tools"] == [{"type": "function", "function": WEATHER_TOOL}]


TOOL_ROUND = [
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "tool_calls": [{"call_id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}}]},
    {"role": "tool", "call_id": "c1", "content": "Sunny"},
]


@pytest.mark.asyncio
async def test_responses_tool_round_becomes_function_call_and_function_call_output_items(provider: ScriptedProvider):
    await collect(config_for(provider, "responses"), TOOL_ROUND)
    request = provider.last_request()
    assert request is not None
    assert request.body["input"] == [
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "Sunny"},
    ]


@pytest.mark.asyncio
async def test_chat_tool_round_becomes_assistant_tool_calls_and_tool_message(provider: ScriptedProvider):
    await collect(config_for(provider, "chat.completions"), TOOL_ROUND)
    request = provider.last_request()
    assert request is not None
    assert request.body["messages"][1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny"},
    ]


# Every item shape the gateway puts on the wire: system and user text, a user
# turn with attachments, an assistant turn that called a tool, the tool's result.
EVERY_WIRE_SHAPE = [
    {"role": "system", "content": "Be kind."},
    {"role": "user", "content": "Hello?"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
        ],
    },
    {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"call_id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}},
    ]},
    {"role": "tool", "call_id": "c1", "content": "Sunny"},
    {"role": "assistant", "content": "It is sunny."},
]


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_wire_items_are_ones_the_sdk_transform_leaves_unchanged(selector: str):
    """WIRE_AS_IS: the gateway hands the conversation to the SDK as `extra_body`,
    skipping the SDK's params transform. That is only right while the transform
    would return our items unchanged; this asks the SDK's own transform."""
    from openai._utils import async_maybe_transform
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    if selector == "responses":
        params, params_type = {"input": wire.responses_input(EVERY_WIRE_SHAPE)}, ResponseCreateParamsStreaming
    else:
        params, params_type = {"messages": wire.chat_messages(EVERY_WIRE_SHAPE)}, CompletionCreateParamsStreaming
    assert len(next(iter(params.values()))) >= 6
    assert await async_maybe_transform(params, params_type) == params


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_the_whole_conversation_reaches_the_provider_in_order(provider: ScriptedProvider, selector: str):
    """The conversation sent as `extra_body` replaces the typed argument in full (Chat
    Completions' required `messages=[]` is not what arrives)."""
    await collect(config_for(provider, selector), EVERY_WIRE_SHAPE)
    request = provider.last_request()
    assert request is not None
    if selector == "responses":
        assert request.body["input"] == wire.responses_input(EVERY_WIRE_SHAPE)
        assert [item.get("role") or item.get("type") for item in request.body["input"]] == [
            "system", "user", "user", "assistant", "function_call", "function_call_output", "assistant",
        ]
    else:
        assert request.body["messages"] == wire.chat_messages(EVERY_WIRE_SHAPE)
        assert [m["role"] for m in request.body["messages"]] == [
            "system", "user", "user", "assistant", "tool", "assistant",
        ]
    assert request.body["model"] == "gpt-5.5" and request.body["stream"] is True


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
@pytest.mark.parametrize(
    ("status", "code"),
    [
        (500, "provider_http_error"),
        (503, "provider_http_error"),
        (429, "provider_rate_limited"),
        (401, "provider_auth_failed"),
        (403, "provider_auth_failed"),
        (400, "provider_bad_request"),
    ],
)
async def test_http_status_maps_to_stable_error_code_with_status_in_detail(
    provider: ScriptedProvider, selector: str, status: int, code: str
):
    provider.script(ScriptedReply(status=status))
    events, error = await collect_until_error(config_for(provider, selector), CHAT)
    assert events == []
    assert error.code == code
    assert error.status == status
    assert f"HTTP {status}" in error.detail


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_sdk_retries_are_off_so_one_failure_is_one_request(provider: ScriptedProvider, selector: str):
    provider.script(ScriptedReply(status=500), ScriptedReply(text="should not be reached"))
    await collect_until_error(config_for(provider, selector), CHAT)
    assert len(provider.requests) == 1


@pytest.mark.asyncio
async def test_error_detail_never_contains_the_api_key(provider: ScriptedProvider):
    provider.script(ScriptedReply(status=401, error_message=f"Incorrect API key provided: {KEY}. Also sk-abc***xyz."))
    _, error = await collect_until_error(config_for(provider, "responses"), CHAT)
    assert error.code == "provider_auth_failed"
    assert KEY not in error.detail and "sk-abc" not in error.detail and KEY not in str(error)
    assert "Incorrect API key provided" in error.detail


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_dropped_stream_yields_earlier_deltas_then_connection_lost(provider: ScriptedProvider, selector: str):
    provider.script(ScriptedReply(chunks=["one", " two", " three", " four"], drop_after_chunks=2))
    events, error = await collect_until_error(config_for(provider, selector), CHAT)
    assert events == [TextDelta("one"), TextDelta(" two")]
    assert error.code == "provider_connection_lost"


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_stream_that_ends_cleanly_without_completion_is_connection_lost(
    provider: ScriptedProvider, selector: str
):
    provider.script(ScriptedReply(chunks=["partial"], finish=False))
    events, error = await collect_until_error(config_for(provider, selector), CHAT)
    assert [e for e in events if not isinstance(e, gw.OutputItemDone)] == [TextDelta("partial")]
    assert error.code == "provider_connection_lost"


@pytest.mark.asyncio
async def test_unreachable_provider_is_connection_lost(provider: ScriptedProvider):
    config = config_for(provider, "responses")
    provider.stop()
    _, error = await collect_until_error(config, CHAT)
    assert error.code == "provider_connection_lost"


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_slow_first_byte_beyond_timeout_is_provider_timeout(provider: ScriptedProvider, selector: str):
    provider.script(ScriptedReply(delay_before_first=1.0))
    _, error = await collect_until_error(config_for(provider, selector, timeout_seconds=0.3), CHAT)
    assert error.code == "provider_timeout"


# --- pacing -----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_delays_before_first_chunk_and_between_chunks_are_observed(provider: ScriptedProvider):
    # The provider's pacing clock is the test's: it records each pause instead of waiting it out.
    log: list[tuple[str, object]] = []
    provider.sleep = lambda seconds: log.append(("pause", seconds))
    provider.script(ScriptedReply(chunks=["a", "b", "c"], delay_before_first=0.3, delay_between_chunks=0.1))
    async for event in stream_reply(config_for(provider, "responses"), CHAT, None, RequestOptions()):
        if isinstance(event, TextDelta):
            log.append(("delta", event.text))
    assert log[0] == ("pause", 0.3)  # before the status line, so before any delta
    assert [seconds for kind, seconds in log if kind == "pause"] == [0.3, 0.1, 0.1, 0.1]  # one after each chunk
    assert [text for kind, text in log if kind == "delta"] == ["a", "b", "c"]


@pytest.mark.asyncio
@pytest.mark.parametrize("selector", SELECTORS)
async def test_hold_keeps_reply_open_after_first_chunk_until_released(provider: ScriptedProvider, selector: str):
    hold, holding = threading.Event(), threading.Event()
    provider.script(ScriptedReply(chunks=["first", " second"], hold=hold, holding=holding))
    stream = stream_reply(config_for(provider, selector), CHAT, None, RequestOptions())

    assert await anext(stream) == TextDelta("first")
    pending = asyncio.ensure_future(anext(stream))
    # The server says when it blocks on the hold (one chunk sent); until the test releases it, nothing more
    # can reach the client.
    assert await asyncio.to_thread(holding.wait, 10), "the server never held the reply"
    assert not pending.done(), "second chunk arrived although the hold was not released"
    hold.set()
    assert await asyncio.wait_for(pending, 5) == TextDelta(" second")
    after = await anext(stream)
    if selector == "responses":  # the message item comes before the end (issue 31)
        assert isinstance(after, gw.OutputItemDone)
        after = await anext(stream)
    assert isinstance(after, Completed)
    await stream.aclose()


# --- route fingerprint / binding -------------------------------------------------------------


def test_route_fingerprint_excludes_api_key_so_key_rotation_keeps_binding():
    old = ProviderConfig("openai", "responses", "gpt-5.5", "https://api.example.com/v1", "sk-old")
    new = ProviderConfig("openai", "responses", "gpt-5.5", "https://api.example.com/v1", "sk-new")
    assert old.binding() == new.binding()
    assert "sk-old" not in repr(old.binding())


@pytest.mark.parametrize(
    "changed",
    [
        {"base_url": "https://other.example.com/v1"},
        {"base_url": "https://api.example.com/v2"},
        {"base_url": "http://api.example.com/v1"},
        {"base_url": "https://api.example.com:8443/v1"},
        {"deployment": "eu-west"},
        {"api_selector": "chat.completions"},
    ],
)
def test_route_fingerprint_changes_when_base_url_deployment_or_selector_changes(changed: dict[str, str]):
    route = {"base_url": "https://api.example.com/v1", "deployment": "", "api_selector": "responses"}
    assert route_fingerprint(**route) != route_fingerprint(**{**route, **changed})


@pytest.mark.parametrize(
    "variant",
    [
        "https://api.example.com/v1/",
        "https://API.Example.COM/v1",
        "https://api.example.com:443/v1",
        "HTTPS://api.example.com/v1",
        "https://user:secret@api.example.com/v1",
        "https://api.example.com/v1?api-version=1#frag",
    ],
)
def test_route_fingerprint_ignores_cosmetic_url_differences(variant: str):
    assert route_fingerprint(variant, "", "responses") == route_fingerprint(
        "https://api.example.com/v1", "", "responses"
    )


def test_default_base_url_and_explicit_openai_url_share_a_fingerprint():
    assert route_fingerprint(None, "", "responses") == route_fingerprint("https://api.openai.com/v1/", "", "responses")
    assert len(route_fingerprint(None, "", "responses")) == 32


def test_binding_records_provider_identity_and_demo_route():
    live = ProviderConfig("openai", "responses", "gpt-5.5", None, KEY)
    demo = ProviderConfig("openai", "responses", "gpt-5.5", None, "")
    assert live.binding().provider_type == "openai"
    assert live.binding().route_fingerprint == route_fingerprint(None, "", "responses")
    assert demo.binding().provider_type == "offline-demo"
    assert demo.binding().route_fingerprint not in (live.binding().route_fingerprint, "")


# --- offline demo and client cache ------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("api_key", [None, ""])
async def test_offline_demo_streams_labelled_echo_without_touching_the_network(
    monkeypatch: pytest.MonkeyPatch, api_key: str | None
):
    def no_network(*_: Any, **__: Any) -> None:
        raise AssertionError("the demo provider must not build an SDK client")

    monkeypatch.setattr(gw.openai, "AsyncOpenAI", no_network)
    config = ProviderConfig("openai", "responses", "gpt-5.5", None, api_key)
    events = await collect(config, [{"role": "user", "content": "x" * 300}])

    deltas = [e for e in events if isinstance(e, TextDelta)]
    text = "".join(d.text for d in deltas)
    assert len(deltas) > 3
    assert text.startswith("(Offline demo") and "OPENAI_API_KEY" in text
    assert text.endswith("You said: " + "x" * 200)
    assert events[-1] == Completed(None, None)


@pytest.mark.asyncio
async def test_sdk_client_is_reused_across_sends_on_the_same_loop(provider: ScriptedProvider):
    config = config_for(provider, "responses")
    assert request_builder._client(config) is request_builder._client(config)
    other_key = config_for(provider, "responses", api_key="sk-other")
    assert request_builder._client(config) is not request_builder._client(other_key)


# --- the scripted provider itself: HTTP control API and standalone process -------------------


def _http(url: str, payload: Any = None) -> Any:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


@pytest.mark.asyncio
async def test_http_control_api_scripts_replies_records_requests_and_releases_named_holds(
    provider: ScriptedProvider,
):
    root = provider.base_url.removesuffix("/v1")
    _http(f"{root}/_control/script", [{"chunks": ["held", " reply"], "hold": "h1"}, {"status": 429}])
    stream = stream_reply(config_for(provider, "chat.completions"), CHAT, None, RequestOptions())
    assert await anext(stream) == TextDelta("held")
    await asyncio.to_thread(_http, f"{root}/_control/release", {"name": "h1"})
    rest = [e async for e in stream]
    assert rest[0] == TextDelta(" reply") and isinstance(rest[-1], Completed)

    _, error = await collect_until_error(config_for(provider, "chat.completions"), CHAT)
    assert error.code == "provider_rate_limited"
    recorded = await asyncio.to_thread(_http, f"{root}/_control/requests")
    assert [r["path"] for r in recorded] == ["/v1/chat/completions", "/v1/chat/completions"]
    await asyncio.to_thread(_http, f"{root}/_control/clear", {})
    assert provider.requests == []


def test_standalone_server_serves_models_and_stops_cleanly_on_sigterm():
    root_dir = Path(__file__).resolve().parents[3]  # the project root (tests/transcript/provider/ is three below)
    env = {**os.environ, "PYTHONPATH": str(root_dir)}
    cmd = [sys.executable, "-m", "tests.support.scripted_provider", "--port", "0"]
    with subprocess.Popen(cmd, cwd=root_dir, env=env, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            assert line.startswith("BASE_URL http://127.0.0.1:")
            base_url = line.split()[1]
            models = _http(f"{base_url}/models")
            assert "gpt-5.5" in [m["id"] for m in models["data"]]
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
