"""No input may produce a 5xx: a fixed hostile corpus against every /api/ route and method, and the WebSocket.

Every JSON write the URL resolver knows (so a new route is covered by
itself) gets each body of the corpus: NUL bytes, an unpaired surrogate, 100-
and 100,000-deep nesting, wrong types, huge and negative numbers, invalid
UUIDs, unknown fields; a 10 MB string goes to the main text endpoints. Routes
that take a conversation get a real one, so the checks behind the 404 run too.
Every answer is below 500, and every error is the JSON shape.
"""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from tests.support.factories import thread
from tests.support.routes import CONVERTER_SAMPLES, ROUTES

pytestmark = pytest.mark.django_db

FIELDS = (
    "content", "text", "name", "title", "password", "persona", "message_id", "folder_id", "parent_id",
    "client_message_id", "pinned_character_id", "attachment_ids", "custom_instructions", "description",
    "image_guidance", "category", "importance", "active", "memories", "ids", "format", "collection",
    "display_name", "owner_name", "hidden", "idempotency_key", "scope_token", "confirmation", "offset",
)
VALUES = {
    "nul": "a\x00b",
    "surrogate": "a\ud800b",
    "list": ["x", {"y": None}],
    "object": {"nested": {"deeper": "z"}},
    "null": None,
    "bool": True,
    "huge": 10**40,
    "negative": -(2**63),
    "float": 1e308,
    "bad_uuid": "not-a-uuid",
}


def bodies() -> dict[str, str]:
    corpus = {name: json.dumps({field: value for field in FIELDS}) for name, value in VALUES.items()}
    corpus["unknown_fields"] = json.dumps({"zz_unknown": 1, "also": [1, 2]})
    corpus["deep_100"] = "[" * 100 + "]" * 100
    corpus["deep_100000"] = '{"a":' * 100_000 + "1" + "}" * 100_000
    corpus["top_level_list"] = json.dumps([1, 2, 3])
    corpus["top_level_string"] = json.dumps("just a string")
    corpus["not_json"] = "{this is not json"
    return corpus


BODIES = bodies()
API_WRITES = [(route, path) for route, path in ROUTES if path.startswith("/api/")]


def assert_error_shape(response, what: str) -> None:
    assert response.status_code < 500, (what, response.status_code, response.content[:300])
    if response.status_code >= 400 and response.status_code != 405:
        body = response.json()
        assert isinstance(body.get("error"), str) and isinstance(body.get("detail"), str), (what, body)


@pytest.fixture
def real_ids():
    conversation = thread(("user", "hello"), ("assistant", "hi"))
    return {"conversation_id": str(conversation.id), "message_id": str(conversation.head_id)}


def concrete(route: str, sample: str, ids: dict[str, str]) -> str:
    """The sample path, with a real conversation (and its head message) where the route names one."""
    if not any(f"<str:{name}>" in route for name in ids):
        return sample
    return "/" + re.sub(
        r"<(?:(\w+):)?(\w+)>", lambda m: ids.get(m.group(2)) or CONVERTER_SAMPLES[m.group(1) or "str"], route
    )


@pytest.mark.parametrize("body_name", sorted(BODIES))
def test_no_input_produces_a_5xx_on_any_api_route(body_name, real_ids):
    client = Client(raise_request_exception=False)
    body = BODIES[body_name]
    for route, sample in API_WRITES:
        path = concrete(route, sample, real_ids)
        for method in ("post", "put", "patch", "delete"):
            response = getattr(client, method)(path, body, content_type="application/json")
            assert_error_shape(response, f"{method.upper()} {path} with {body_name}")


@pytest.mark.parametrize(
    "path_template",
    ["/api/memories/", "/api/archive/documents/", "/api/library/files/", "/api/conversations/{c}/messages/?stream=false"],
)
def test_no_input_produces_a_5xx_for_a_ten_megabyte_string(path_template, real_ids):
    path = path_template.format(c=real_ids["conversation_id"])
    body = json.dumps({field: "x" * 10_000_000 for field in ("content", "text", "name", "title")})
    response = Client(raise_request_exception=False).post(path, body, content_type="application/json")
    assert_error_shape(response, path)
    assert response.status_code in (400, 413)


def test_no_input_produces_a_5xx_in_query_strings(real_ids):
    client = Client(raise_request_exception=False)
    for route, sample in ROUTES:
        if not sample.startswith("/api/"):
            continue
        path = concrete(route, sample, real_ids)
        for query in ("q=%00", "limit=-1", "limit=99999999999999999999", "trashed=%ED%A0%80", "offset=x"):
            response = client.get(f"{path}?{query}")
            assert response.status_code < 500, (path, query, response.content[:200])


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_no_input_produces_a_5xx_on_the_websocket():
    from elion.asgi import application

    conversation = await sync_to_async(thread)()
    socket = WebsocketCommunicator(application, f"/ws/conversations/{conversation.id}/")
    connected, _ = await socket.connect(timeout=5)
    assert connected
    frames = [*BODIES.values(), json.dumps({"type": "send", "content": "a\x00b"}), json.dumps({"type": ["send"]})]
    for frame in frames:
        await socket.send_to(text_data=frame)
        reply = await socket.receive_json_from(timeout=10)
        assert reply["type"] == "error" and reply["error"] != "internal_error", (frame[:80], reply)
    await socket.disconnect()


TYPE_VALUES = {name: VALUES[name] for name in ("list", "object", "null", "bool", "huge", "negative", "float", "bad_uuid")}


@pytest.mark.slow  # every field of every route, one value type at a time: minutes, not seconds
@pytest.mark.parametrize("value_name", sorted(TYPE_VALUES))
def test_no_input_produces_a_5xx_field_by_field(value_name, real_ids):
    """Each field alone with a wrong type, so it reaches the checks an unknown-field refusal would hide."""
    client = Client(raise_request_exception=False)
    value = TYPE_VALUES[value_name]
    for route, sample in API_WRITES:
        path = concrete(route, sample, real_ids)
        if client.options(path).status_code == 404:
            continue
        for field in FIELDS:
            body = json.dumps({field: value})
            for method in ("post", "patch"):
                response = getattr(client, method)(path, body, content_type="application/json")
                assert_error_shape(response, f"{method.upper()} {path} with {field}={value_name}")
