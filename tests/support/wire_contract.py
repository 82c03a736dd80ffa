"""The scripted provider's contract with the installed `openai` package (issue 31).

* `request_problem`: every request body is checked against the SDK's own request types
  (`ResponseCreateParamsStreaming` / `…NonStreaming`, `CompletionCreateParamsStreaming` / `…NonStreaming`,
  `ImageGenerateParamsNonStreaming`), the TypedDicts the SDK generates from OpenAI's OpenAPI document,
  with extra keys forbidden at every level. A body that breaks them gets the 400 the real API gives:
  `unknown_parameter`, `missing_required_parameter`, `invalid_value` or `invalid_type`, with `param`
  the dotted path (`input[1].content[0].detail`).
* `responses_event` / `chat_chunk`: every event streamed is built from the SDK's event models
  (`ResponseStreamEvent`, `ChatCompletionChunk`): a payload they do not accept raises here, in the test
  that scripted it, instead of reaching the app.

Why a walk over the TypedDicts rather than pydantic's `TypeAdapter`: pydantic validates `Iterable[…]`
fields (the SDK's lists: `tools`, message `content`) lazily, so nothing inside them would be checked,
and TypedDicts cannot be given `extra="forbid"` from outside; its union errors also name every member.
The walk reads the same types, forbids extra keys everywhere, and names the one member a dict's
`type` (or `role`) picks, so its message is the API's.
"""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any

import typing_extensions

_NONE = type(None)
_WRAPPERS = {typing_extensions.Required, typing_extensions.NotRequired, typing_extensions.ReadOnly}
_LISTS = {list, collections.abc.Iterable, collections.abc.Sequence, collections.abc.Iterator}
_MAPPINGS = {dict, collections.abc.Mapping}
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "an array",
               dict: "an object", _NONE: "null"}


@dataclass(frozen=True)
class Problem:
    code: str  # unknown_parameter | missing_required_parameter | invalid_value | invalid_type
    param: str
    message: str


@functools.cache
def _request_types() -> dict[tuple[str, bool], Any]:
    from openai.types.audio import transcription_create_params as transcription
    from openai.types.audio.speech_create_params import SpeechCreateParams
    from openai.types.chat import completion_create_params as chat
    from openai.types.image_generate_params import ImageGenerateParamsNonStreaming
    from openai.types.responses import response_create_params as responses

    return {
        ("/v1/responses", True): responses.ResponseCreateParamsStreaming,
        ("/v1/responses", False): responses.ResponseCreateParamsNonStreaming,
        ("/v1/chat/completions", True): chat.CompletionCreateParamsStreaming,
        ("/v1/chat/completions", False): chat.CompletionCreateParamsNonStreaming,
        ("/v1/images/generations", False): ImageGenerateParamsNonStreaming,
        ("/v1/audio/transcriptions", True): transcription.TranscriptionCreateParamsStreaming,
        ("/v1/audio/transcriptions", False): transcription.TranscriptionCreateParamsNonStreaming,
        ("/v1/audio/speech", False): SpeechCreateParams,
    }


def request_problem(path: str, body: Any) -> dict[str, Any] | None:  # noqa: ANN401 - any JSON
    """The API's 400 body for a request the SDK's types reject, or None when they accept it."""
    params = _request_types().get((path, bool(isinstance(body, dict) and body.get("stream"))))
    if params is None:
        return None
    problems = _check(body, params, "")
    if not problems:
        return None
    first = problems[0]
    return {"error": {"message": first.message, "type": "invalid_request_error", "param": first.param or None,
                      "code": first.code}}


def _join(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)


def _kind(value: Any) -> str:  # noqa: ANN401 - any JSON
    for python_type in (bool, int, float, str, list, dict, _NONE):
        if isinstance(value, python_type):
            return _TYPE_NAMES[python_type]
    return type(value).__name__


def _unwrap(tp: Any) -> Any:  # noqa: ANN401 - a typing construct
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated or origin in _WRAPPERS:
            tp = typing.get_args(tp)[0]
        else:
            return tp


def _literal_list(values: tuple) -> str:
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def _check(value: Any, tp: Any, path: str) -> list[Problem]:  # noqa: ANN401, C901, PLR0911, PLR0912 - one case per kind of type
    tp = _unwrap(tp)
    if tp is Any or tp is object:
        return []
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if value in allowed and type(value) in {type(a) for a in allowed}:
            return []
        return [Problem("invalid_value", path,
                        f"Invalid value: '{value}'. Supported values are: {_literal_list(allowed)}.")]
    if origin in (typing.Union, types.UnionType):
        return _check_union(value, typing.get_args(tp), path)
    if typing_extensions.is_typeddict(tp):
        return _check_typeddict(value, tp, path)
    if tp in _LISTS or origin in _LISTS:
        if not isinstance(value, list):
            return [_wrong_type(path, "an array", value)]
        (item,) = typing.get_args(tp) or (Any,)
        return [p for index, element in enumerate(value) for p in _check(element, item, _join(path, index))]
    if tp in _MAPPINGS or origin in _MAPPINGS:
        if not isinstance(value, dict):
            return [_wrong_type(path, "an object", value)]
        args = typing.get_args(tp)
        return [p for key, element in value.items() for p in _check(element, args[1] if args else Any, _join(path, key))]
    if tp is _NONE:
        return [] if value is None else [_wrong_type(path, "null", value)]
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else [_wrong_type(path, "a number", value)]
    if tp in (str, int, bool):
        ok = isinstance(value, tp) and (tp is bool or not isinstance(value, bool))
        return [] if ok else [_wrong_type(path, _TYPE_NAMES[tp], value)]
    return []  # a type the JSON cannot break (bytes-like file inputs, which are not sent as JSON)


def _wrong_type(path: str, expected: str, value: Any) -> Problem:  # noqa: ANN401 - any JSON
    return Problem("invalid_type", path, f"Invalid type for '{path}': expected {expected}, but got {_kind(value)} instead.")


def _tag_matches(member: Any, value: dict) -> bool:  # noqa: ANN401 - a TypedDict class
    """Does `value`'s `type` (and `role`) fit this TypedDict member's literal for it?"""
    hints = _hints(member)
    for tag in ("type", "role"):
        if tag not in hints or tag not in value:
            continue
        literal = _unwrap(hints[tag])
        if typing.get_origin(literal) is typing.Literal and value[tag] not in typing.get_args(literal):
            return False
    return True


def _check_union(value: Any, members: tuple, path: str) -> list[Problem]:  # noqa: ANN401 - any JSON
    members = tuple(_unwrap(m) for m in members)
    if value is None and _NONE in members:
        return []
    candidates = [m for m in members if m is not _NONE]
    if isinstance(value, dict):
        tagged = [m for m in candidates if typing_extensions.is_typeddict(m) and _tag_matches(m, value)]
        candidates = tagged or candidates
    best: list[Problem] | None = None
    for member in candidates:
        problems = _check(value, member, path)
        if not problems:
            return []
        if best is None or _weight(problems, path) < _weight(best, path):
            best = problems
    return best or [_wrong_type(path, "one of the documented forms", value)]


def _weight(problems: list[Problem], path: str) -> tuple[bool, int]:
    """Which member's complaints explain a union's failure best: one whose type the value has (not a bare
    type mismatch at the union itself), then the fewest complaints."""
    shallow = len(problems) == 1 and problems[0].code == "invalid_type" and problems[0].param == path
    return shallow, len(problems)


@functools.cache
def _hints(typed_dict: Any) -> dict[str, Any]:  # noqa: ANN401 - a TypedDict class
    return typing.get_type_hints(typed_dict, include_extras=True)


def _lineage(typed_dict: Any) -> list[Any]:  # noqa: ANN401 - a TypedDict class
    """A TypedDict's TypedDict bases, the oldest first, then itself (a TypedDict's `__mro__` has none)."""
    chain: list[Any] = []
    for base in getattr(typed_dict, "__orig_bases__", ()):
        if typing_extensions.is_typeddict(base):
            chain += [c for c in _lineage(base) if c not in chain]
    return [*chain, typed_dict]


@functools.cache
def _required_keys(typed_dict: Any) -> frozenset[str]:  # noqa: ANN401 - a TypedDict class
    """The keys a TypedDict requires. Read from its annotations, not `__required_keys__`: the SDK's modules
    use `from __future__ import annotations`, so `Required[…]` is a string when the class is made and
    `__required_keys__` misses it. A key is required when marked `Required`, or when the class that
    declares it is total and it is not marked `NotRequired`."""
    required = set()
    for key, hint in _hints(typed_dict).items():
        origin = typing.get_origin(hint)
        if origin is typing_extensions.Required:
            required.add(key)
        elif origin is not typing_extensions.NotRequired:
            owner = next((c for c in _lineage(typed_dict) if key in getattr(c, "__annotations__", {})), typed_dict)
            if getattr(owner, "__total__", True):
                required.add(key)
    return frozenset(required)


def _check_typeddict(value: Any, typed_dict: Any, path: str) -> list[Problem]:  # noqa: ANN401 - any JSON
    if not isinstance(value, dict):
        return [_wrong_type(path, "an object", value)]
    hints = _hints(typed_dict)
    problems = [
        Problem("unknown_parameter", _join(path, key), f"Unknown parameter: '{_join(path, key)}'.")
        for key in value if key not in hints
    ]
    problems += [
        Problem("missing_required_parameter", _join(path, key), f"Missing required parameter: '{_join(path, key)}'.")
        for key in _required_keys(typed_dict) if key not in value
    ]
    for key, element in value.items():
        if key in hints:
            problems += _check(element, hints[key], _join(path, key))
    return problems


# --- events, built from the SDK's models ----------------------------------------------------------


@functools.cache
def _response_event_models() -> dict[str, Any]:
    """The SDK's Responses stream event model for each event `type`."""
    from openai.types.responses import ResponseStreamEvent

    union = typing.get_args(_unwrap(ResponseStreamEvent))
    return {value: model for model in union for value in typing.get_args(model.model_fields["type"].annotation)}


def responses_event(payload: dict[str, Any]) -> dict[str, Any]:
    """A Responses stream event as the SDK's own model of its `type` holds it (ValueError when it can't)."""
    model = _response_event_models().get(payload.get("type"))
    if model is None:
        raise ValueError(f"the SDK has no Responses event of type {payload.get('type')!r}")
    return model.model_validate(payload).model_dump(mode="json", exclude_unset=True)


def chat_chunk(payload: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions chunk as the SDK's `ChatCompletionChunk` holds it (ValueError when it can't)."""
    from openai.types.chat import ChatCompletionChunk

    return ChatCompletionChunk.model_validate(payload).model_dump(mode="json", exclude_unset=True)


@functools.cache
def _audio_event_models() -> dict[str, Any]:
    """The SDK's transcription stream event model for each event `type`."""
    from openai.types.audio import TranscriptionStreamEvent

    union = typing.get_args(_unwrap(TranscriptionStreamEvent))
    return {value: model for model in union for value in typing.get_args(model.model_fields["type"].annotation)}


def audio_event(payload: dict[str, Any]) -> dict[str, Any]:
    """A transcription stream event (`transcript.text.delta` / `.done`) as the SDK's model holds it."""
    model = _audio_event_models().get(payload.get("type"))
    if model is None:
        raise ValueError(f"the SDK has no transcription event of type {payload.get('type')!r}")
    return model.model_validate(payload).model_dump(mode="json", exclude_unset=True)


def sdk_event(data: Any) -> Any:  # noqa: ANN401 - an SSE payload
    """An SSE payload through the SDK's model of it: Responses events and Chat Completions chunks (`[DONE]`
    and other strings pass as they are)."""
    if not isinstance(data, dict):
        return data
    if "error" in data and "type" not in data:
        return data  # Chat Completions' mid-stream error: no chunk, the API's error object (the SDK raises on it)
    if data.get("object") == "chat.completion.chunk":
        return chat_chunk(data)
    if str(data.get("type", "")).startswith("transcript."):
        return audio_event(data)
    return responses_event(data)
