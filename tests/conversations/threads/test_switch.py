"""Versions (issue 19): every message's `siblings`, and `POST …/switch/` moving the head to the newest end
under a message. Switching, like rewind, only moves the head: nothing is deleted or rewritten."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
import yaml
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import AsyncClient, Client
from django.test.utils import CaptureQueriesContext

from conversations.services.threads.thread_writes import conversation_rewind, conversation_switch
from conversations.web.messages.branch_list import LIST_BATCH
from elion.base.errors import Conflict
from tests.conftest import parse_sse, read_streaming
from tests.support.factories import api_call, thread, turns_append, wait_for
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, Message, MessageStatus, Role
from transcript.tree import live_branch


def messages_of(client: Client, conversation, **query) -> list[dict]:
    return api_call(client, "GET", f"/api/conversations/{conversation.id}/messages/" + (
        "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
    ))["results"]


def switch(client: Client, conversation, message, status: int = 200) -> dict:
    """`message`: a row or an id."""
    message_id = str(getattr(message, "id", message))
    return api_call(client, "POST", f"/api/conversations/{conversation.id}/switch/", {"message_id": message_id},
                    status=status)


def versioned_thread():
    """u1 a1 u2 a2, then a retry of a2 (a2b), an edit of u2 (u2e with its reply) and an edit of the
    first turn (a second root, with its reply). Names → rows; the head is the root edit's reply."""
    conversation = thread()
    u1, a1, u2, a2 = turns_append(conversation, ("user", "u1"), ("assistant", "a1"), ("user", "u2"), ("assistant", "a2"))
    (a2b,) = turns_append(conversation, ("assistant", "a2 again"), parent=u2)
    u2e, a2e = turns_append(conversation, ("user", "u2 edited"), ("assistant", "a2e"), parent=a1)
    r2, r2a = turns_append(conversation, ("user", "u1 edited"), ("assistant", "r2a"), parent=None)
    conversation.refresh_from_db()
    return conversation, dict(u1=u1, a1=a1, u2=u2, a2=a2, a2b=a2b, u2e=u2e, a2e=a2e, r2=r2, r2a=r2a)


def siblings(results: list[dict]) -> dict[str, tuple[int, int, list[str]]]:
    return {m["content"]: (m["siblings"]["index"], m["siblings"]["count"], m["siblings"]["ids"]) for m in results}


@pytest.mark.django_db
def test_each_message_carries_its_place_among_its_parents_children_in_creation_order():
    client = Client()
    conversation, m = versioned_thread()
    ids = {name: str(row.id) for name, row in m.items()}
    # The head is the second root's reply: the roots are siblings of each other.
    assert siblings(messages_of(client, conversation)) == {
        "u1 edited": (2, 2, [ids["u1"], ids["r2"]]),
        "r2a": (1, 1, [ids["r2a"]]),
    }
    switch(client, conversation, m["a2"])
    whole = messages_of(client, conversation)
    assert siblings(whole) == {
        "u1": (1, 2, [ids["u1"], ids["r2"]]),
        "a1": (1, 1, [ids["a1"]]),
        "u2": (1, 2, [ids["u2"], ids["u2e"]]),
        "a2": (1, 2, [ids["a2"], ids["a2b"]]),
    }
    # The paged forms say the same of the same messages.
    assert siblings(messages_of(client, conversation, limit=2)) == {k: siblings(whole)[k] for k in ("u2", "a2")}
    around = messages_of(client, conversation, limit=3, around=ids["a1"])
    assert siblings(around) == {k: siblings(whole)[k] for k in ("u1", "a1", "u2")}


@pytest.mark.django_db
def test_the_stored_prompt_is_never_a_sibling_of_the_roots():
    client = Client()
    conversation = thread(("user", "hi"), ("assistant", "hello"))
    Message.objects.create(conversation=conversation, seq=99, role=Role.SYSTEM, content="stored prompt")
    first = messages_of(client, conversation)[0]
    assert first["siblings"] == {"index": 1, "count": 1, "ids": [first["id"]]}
    assert messages_of(client, conversation, limit=5)[0]["siblings"] == first["siblings"]


@pytest.mark.django_db
def test_switch_to_a_sibling_moves_the_head_to_the_newest_end_under_it():
    client = Client()
    conversation, m = versioned_thread()
    # u2's subtree ends in a2 and a2b (the retry, newer): the retry is shown.
    body = switch(client, conversation, m["u2"])
    conversation.refresh_from_db()
    assert conversation.head_id == m["a2b"].id and body["id"] == str(conversation.id) and "title" in body
    # Picking the older retry shows it; picking the edit shows its reply.
    switch(client, conversation, m["a2"])
    assert [x["content"] for x in messages_of(client, conversation)] == ["u1", "a1", "u2", "a2"]
    switch(client, conversation, m["u2e"])
    assert [x["content"] for x in messages_of(client, conversation)] == ["u1", "a1", "u2 edited", "a2e"]
    # The first root's newest end is under the edit of u2, made after the retry.
    switch(client, conversation, m["r2"])
    switch(client, conversation, m["u1"])
    conversation.refresh_from_db()
    assert conversation.head_id == m["a2e"].id


@pytest.mark.django_db
def test_switching_deletes_and_rewrites_nothing():
    client = Client()
    conversation, m = versioned_thread()

    def rows() -> list[tuple]:
        return list(Message.objects.filter(conversation=conversation).order_by("seq").values_list(
            "id", "parent_id", "seq", "role", "content", "status", "updated_at"))

    before = rows()
    for name in ("u2", "a2", "r2", "u1", "a1"):
        switch(client, conversation, m[name])
    assert rows() == before


@pytest.mark.django_db
def test_a_failed_or_stopped_reply_can_be_the_head_a_switch_shows():
    client = Client()
    conversation = thread(("user", "q"), ("assistant", "first answer"))
    (question,) = [row for row in live_branch(conversation) if row.role == Role.USER]
    (failed,) = turns_append(conversation, ("assistant", ""), parent=question, status=MessageStatus.FAILED)
    first = live_branch(conversation)[1]
    switch(client, conversation, first)
    switch(client, conversation, question)
    conversation.refresh_from_db()
    assert conversation.head_id == failed.id  # the newest end, as Retry left it
    (stopped,) = turns_append(conversation, ("assistant", "half"), parent=question, status=MessageStatus.INTERRUPTED)
    switch(client, conversation, first)
    switch(client, conversation, question)
    conversation.refresh_from_db()
    assert conversation.head_id == stopped.id


@pytest.mark.django_db
def test_a_user_turn_without_a_reply_is_passed_over_for_the_reply_above_it():
    client = Client()
    conversation = thread(("user", "q"), ("assistant", "a"))
    answer = conversation.head
    turns_append(conversation, ("user", "never answered"))  # the head is a user turn only in old data
    switch(client, conversation, answer)
    conversation.refresh_from_db()
    assert conversation.head_id == answer.id
    unanswered = Message.objects.get(conversation=conversation, content="never answered")
    body = switch(client, conversation, unanswered, status=400)
    assert body["error"] == "invalid_switch_target" and body["detail"]


@pytest.mark.django_db
def test_after_a_rewind_a_switch_returns_to_the_later_turns():
    client = Client()
    conversation = thread(("user", "u1"), ("assistant", "a1"), ("user", "u2"), ("assistant", "a2"))
    a1, a2 = live_branch(conversation)[1], conversation.head
    conversation_rewind(conversation_id=conversation.id, message_id=a1.id)
    assert [x["content"] for x in messages_of(client, conversation)] == ["u1", "a1"]
    # The rewound-to reply itself: the newest end under it is where the owner was.
    switch(client, conversation, a1)
    conversation.refresh_from_db()
    assert conversation.head_id == a2.id
    # Rewind, send again: the new turn and the rewound-away one are versions of each other.
    conversation_rewind(conversation_id=conversation.id, message_id=a1.id)
    conversation.refresh_from_db()
    turns_append(conversation, ("user", "u2 again"), ("assistant", "a2 again"))
    shown = siblings(messages_of(client, conversation))
    assert shown["u2 again"][:2] == (2, 2)
    switch(client, conversation, shown["u2 again"][2][0])
    assert [x["content"] for x in messages_of(client, conversation)] == ["u1", "a1", "u2", "a2"]


@pytest.mark.django_db
def test_switch_refuses_bad_input_in_the_json_error_shape():
    client = Client()
    conversation, m = versioned_thread()
    other = thread(("user", "elsewhere"), ("assistant", "there"))
    path = f"/api/conversations/{conversation.id}/switch/"
    assert api_call(client, "POST", path, {"message_id": str(other.head_id)}, status=404)["error"] == "message_not_found"
    assert api_call(client, "POST", path, {"message_id": str(uuid.uuid4())}, status=404)["error"] == "message_not_found"
    for body in ({}, {"message_id": "not-a-uuid"}, {"message_id": None}, {"message_id": [1]}, ["x"]):
        answer = api_call(client, "POST", path, body, status=400)
        assert set(answer) == {"error", "detail"}, body
    assert api_call(client, "POST", f"/api/conversations/{uuid.uuid4()}/switch/", {"message_id": str(m["a2"].id)},
                    status=404)["error"] == "conversation_not_found"
    # The stored prompt stands outside the tree: no version to show.
    prompt = Message.objects.create(conversation=conversation, seq=99, role=Role.SYSTEM, content="stored prompt")
    assert api_call(client, "POST", path, {"message_id": str(prompt.id)}, status=400)["error"] == "invalid_switch_target"
    conversation.refresh_from_db()
    assert conversation.head_id == m["r2a"].id


@pytest.mark.django_db
def test_switch_is_refused_while_a_reply_streams_and_leaves_the_head():
    conversation, m = versioned_thread()
    (live,) = turns_append(conversation, ("assistant", ""), parent=m["u2"], status=MessageStatus.STREAMING,
                           lease_expires_at=None)
    Message.objects.filter(pk=live.pk).update(lease_expires_at="2999-01-01T00:00:00Z")
    with pytest.raises(Conflict) as refused:
        conversation_switch(conversation_id=conversation.id, message_id=m["u2e"].id)
    assert refused.value.code == "reply_in_progress"
    conversation.refresh_from_db()
    assert conversation.head_id == live.id


def statements(client: Client, conversation, **query) -> int:
    with CaptureQueriesContext(connection) as queries:
        messages_of(client, conversation, **query)
    return len(queries)


def branching_thread(turns: int) -> Conversation:
    """`turns` exchanges, each reply retried once (so every reply has a sibling)."""
    conversation = thread()
    for i in range(turns):
        question, _ = turns_append(conversation, ("user", f"q{i}"), ("assistant", f"first {i}"))
        turns_append(conversation, ("assistant", f"again {i}"), parent=question)
    conversation.refresh_from_db()
    return conversation


@pytest.mark.django_db
def test_the_messages_api_statement_count_does_not_grow_with_thread_length():
    """A page costs the same at any length; the whole list (no `limit`) streams a segment of LIST_BATCH
    messages at a time, so its statements grow by the same few per segment, never per message."""
    client = Client()
    threads = {turns: branching_thread(turns) for turns in (5, LIST_BATCH // 2, LIST_BATCH, LIST_BATCH * 3 // 2)}
    messages_of(client, threads[5])  # the first request of a process also syncs the owner row
    assert statements(client, threads[5], limit=4) == statements(client, threads[LIST_BATCH * 3 // 2], limit=4)
    whole = {turns: statements(client, conversation) for turns, conversation in threads.items()}
    # 10 and LIST_BATCH live messages: one segment each; then 2 and 3 segments.
    assert whole[5] == whole[LIST_BATCH // 2]
    per_segment = whole[LIST_BATCH] - whole[LIST_BATCH // 2]
    assert 0 < per_segment == whole[LIST_BATCH * 3 // 2] - whole[LIST_BATCH] <= 3, whole
    listed = messages_of(client, threads[LIST_BATCH * 3 // 2])
    assert [m["id"] for m in listed] == [str(m.id) for m in live_branch(threads[LIST_BATCH * 3 // 2])]
    assert all(x["siblings"]["count"] == 2 for x in listed if x["role"] == "assistant")


@pytest.mark.django_db
def test_the_api_schema_lists_switch_and_siblings():
    client = Client()
    schema = yaml.safe_load(client.get("/api/schema/").content)
    assert "post" in schema["paths"]["/api/conversations/{conversation_id}/switch/"]
    assert "siblings" in schema["components"]["schemas"]["Message"]["properties"]


# --- a switch racing a send ------------------------------------------------------------------


async def post_json(client: AsyncClient, path: str, body: dict):
    return await client.post(path, body, content_type="application/json")


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_switch_while_a_send_streams_is_409_and_a_send_after_a_switch_continues_from_the_new_head(
    scripted_provider,
):
    client = AsyncClient()
    conversation, m = await sync_to_async(versioned_thread)()
    base = f"/api/conversations/{conversation.id}"
    gate = threading.Event()
    scripted_provider.script(ScriptedReply(chunks=["one", "two"], hold=gate))
    sending = asyncio.ensure_future(post_json(client, f"{base}/messages/", {"content": "third"}))
    try:
        await wait_for(lambda: Message.objects.filter(conversation=conversation, status=MessageStatus.STREAMING).exists())
        refused = await post_json(client, f"{base}/switch/", {"message_id": str(m["a2"].id)})
        assert refused.status_code == 409 and refused.json()["error"] == "reply_in_progress"
    finally:
        gate.set()
    response = await sending
    assert response.status_code == 200
    parse_sse(await read_streaming(response))
    streamed = await sync_to_async(lambda: Conversation.objects.get(pk=conversation.pk).head)()
    assert streamed.status == MessageStatus.COMPLETE and streamed.content == "onetwo"
    # The reply settled: the switch goes through, and the next send answers from the new head.
    switched = await post_json(client, f"{base}/switch/", {"message_id": str(m["a2"].id)})
    assert switched.status_code == 200, switched.content
    answered = await post_json(client, f"{base}/messages/?stream=false", {"content": "after the switch"})
    assert answered.status_code == 200, answered.content
    user = answered.json()["user_message"]
    assert user["parent_id"] == str(m["a2"].id)
    assert user["siblings"]["count"] == 1
    contents = await sync_to_async(lambda: [x.content for x in live_branch(Conversation.objects.get(pk=conversation.pk))])()
    assert contents[:4] == ["u1", "a1", "u2", "a2"] and contents[4] == "after the switch"


@pytest.mark.django_db
def test_the_trash_allows_a_switch_as_it_allows_a_rewind():
    client = Client()
    conversation, m = versioned_thread()
    Conversation.objects.filter(pk=conversation.pk).update(trashed=True)
    switch(client, conversation, m["a2"])
    conversation.refresh_from_db()
    assert conversation.head_id == m["a2"].id and conversation.trashed
