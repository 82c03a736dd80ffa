"""Every provider call goes through the one request builder (issue 45, transcript/provider/request_builder.py).

Read from the source of every module of the project, so a new call site is held to it too:

* the SDK client is made and called in one place (`request_builder._client`, by `provider_call`);
  no module names an SDK endpoint (`.responses.create`, `.images.generate`, …) or passes `extra_body`;
* `provider_call` is given a request straight from one of the builder's functions, and only the builder's
  text turns and the gateway's image and audio adapters call it;
* `RequestOptions` are made only by the builder (`request_options`, `compaction_request_options`), and the
  gateway's `stream_reply` has no default for them, so no request goes out with defaults in place of the
  conversation's settings (compaction did, before issue 45);
* the builders send every field the SDK types as a typed argument: only the conversation goes as-is.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tests.support.send_trace import ROOT, contract_layers
from transcript.provider import gateway
from transcript.provider import request_builder as builder

PACKAGES, _ = contract_layers()

BUILDER = Path("transcript/provider/request_builder.py")
BUILDERS = {"responses_request", "chat_request", "image_request", "transcription_request", "speech_request"}
# Where `provider_call` is called: the builder's two text turns (`responses_turn`, `chat_turn`, which the
# Responses and Chat Completions adapters call), the image adapter and the audio one.
CALLERS = {BUILDER, Path("transcript/provider/images.py"), Path("transcript/provider/audio.py")}
TURNS = {"responses_turn": Path("transcript/provider/responses.py"), "chat_turn": Path("transcript/provider/chat.py")}


def _sources() -> dict[Path, ast.Module]:
    trees = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" not in relative.parts:
                trees[relative] = ast.parse(path.read_text(), filename=str(relative))
    return trees


SOURCES = _sources()


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _calls(name: str) -> list[tuple[Path, ast.Call, str]]:
    """Every call of `name` (a bare or an attribute name) in the project: (module, call, enclosing function)."""
    found = []
    for path, tree in SOURCES.items():
        for function in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            for statement in function.body:
                for node in ast.walk(statement):
                    if isinstance(node, ast.Call) and _called_name(node) == name:
                        found.append((path, node, getattr(function, "name", "<module>")))
    # Nested functions are walked from each enclosing one too: keep the innermost.
    innermost: dict[tuple[Path, int, int], tuple[Path, ast.Call, str]] = {}
    for path, node, function in found:
        innermost[(path, node.lineno, node.col_offset)] = (path, node, function)
    return list(innermost.values())


def test_the_sdk_client_is_made_in_one_place_and_called_only_by_the_builders_provider_call():
    made = {p for name in ("AsyncOpenAI", "OpenAI") for p, _, _ in _calls(name)}
    assert made == {BUILDER}
    # `_client` the function (transcript/provider/request_builder.py), not a method of that name (the backups' S3 client).
    sdk_client = {(p, f) for p, call, f in _calls("_client") if _dotted(call.func).split(".")[0] != "self"}
    assert sdk_client == {(BUILDER, "provider_call")}
    # Every adapter sends through it: the text turn (both APIs), the image, the transcription and the speech.
    assert {p for p, _, _ in _calls("provider_call")} == CALLERS
    for turn, adapter in TURNS.items():
        assert {p for p, _, _ in _calls(turn)} == {adapter}


@pytest.mark.parametrize("endpoint", sorted(builder.ENDPOINTS))
def test_no_module_calls_an_sdk_endpoint_directly(endpoint: str):
    """`provider_call` reaches the method by its name (`ENDPOINTS`); nothing else spells it out."""
    *_, last = endpoint.split(".")
    direct = [(p, node.lineno) for p, node, _ in _calls(last) if _dotted(node.func).endswith(endpoint)]
    assert direct == []


def test_extra_body_is_passed_only_by_provider_call():
    uses = []
    for path, tree in SOURCES.items():
        for node in ast.walk(tree):
            named = node.arg if isinstance(node, ast.keyword) else getattr(node, "value", None)
            if named == "extra_body" and isinstance(node, (ast.keyword, ast.Constant)):
                uses.append(path)
    assert uses == [BUILDER]


def test_provider_call_is_given_a_request_straight_from_a_builder():
    for path, call, function in _calls("provider_call"):
        assert path in CALLERS, f"{path}:{call.lineno} ({function}) calls the provider outside the gateway"
        (_, request) = call.args
        if isinstance(request, ast.Name):  # built just above, in the same function
            request = _assigned_value(SOURCES[path], function, request.id)
        assert isinstance(request, ast.Call) and _called_name(request) in BUILDERS, (
            f"{path}:{call.lineno} sends a request not made by the request builder"
        )


def _assigned_value(tree: ast.Module, function: str, name: str) -> ast.AST | None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            values = [a.value for a in ast.walk(node) if isinstance(a, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == name for t in a.targets)]
            return values[0] if len(values) == 1 else None
    return None


def test_request_options_are_made_only_by_the_builder():
    makers = {(p, f) for p, _, f in _calls("RequestOptions")}
    assert makers == {(BUILDER, "request_options")}
    # The send and the compaction take theirs from the builder.
    assert {p for p, _, _ in _calls("request_options")} >= {Path("conversations/sending/prepare.py"), BUILDER}
    assert {p for p, _, _ in _calls("compaction_request_options")} == {Path("continuity/services/compaction.py")}
    assert inspect.signature(gateway.stream_reply).parameters["options"].default is inspect.Parameter.empty


def test_every_stream_reply_call_passes_the_options():
    calls = [(p, call) for p, call, _ in _calls("stream_reply") if p.parts[:2] != ("transcript", "provider")]
    assert {p for p, _ in calls} >= {Path("conversations/sending/run.py"), Path("continuity/services/compaction.py")}
    for path, call in calls:
        assert len(call.args) + len(call.keywords) == 4, f"{path}:{call.lineno} calls stream_reply without options"


def test_only_the_conversation_travels_outside_the_sdks_typed_arguments():
    """Every other field a builder sets is one the installed SDK's params type declares."""
    from openai.types.audio import speech_create_params, transcription_create_params
    from openai.types.chat import completion_create_params
    from openai.types.image_generate_params import ImageGenerateParamsNonStreaming
    from openai.types.responses import response_create_params

    from transcript.provider.config import ProviderConfig

    config = ProviderConfig("openai", "responses", "gpt-5.5", None, "k")
    options = builder.RequestOptions(
        store=True, cache_key="k", reasoning_effort="high", verbosity="low", reasoning_summary=True,
        cache_retention="24h",
    )
    tools = [{"type": "web_search"}, {"name": "f", "description": "", "parameters": {"type": "object"}}]
    messages = [{"role": "user", "content": "hi"}]
    built = {
        "responses": (builder.responses_request(config, messages, tools, options),
                      response_create_params.ResponseCreateParamsStreaming),
        "chat": (builder.chat_request(config, messages, tools, options),
                 completion_create_params.CompletionCreateParamsStreaming),
        "image": (builder.image_request(prompt="a cat", model="gpt-image-1"), ImageGenerateParamsNonStreaming),
        "transcription": (
            builder.transcription_request(data=b"", filename="a.wav", mime="audio/wav", model="m", language="en",
                                          stream=True),
            transcription_create_params.TranscriptionCreateParamsStreaming,
        ),
        "speech": (builder.speech_request(text="hi", model="m", voice="alloy", instructions="calm",
                                          response_format="mp3"), speech_create_params.SpeechCreateParams),
    }
    for name, (request, params_type) in built.items():
        declared = set(params_type.__annotations__)
        assert set(request.params) <= declared, f"{name}: {set(request.params) - declared} not typed by the SDK"
        assert set(request.conversation) <= builder.WIRE_AS_IS_FIELDS & declared, name
    assert set(built["responses"][0].conversation) == {"input"}
    assert set(built["chat"][0].conversation) == {"messages"}
