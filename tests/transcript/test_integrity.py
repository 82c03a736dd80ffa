"""Seed 004 transcript invariants: interrupted tool calls are closed with a
synthetic (marked) error result so every projected request is well paired, and
`check_transcripts` reports broken invariants and repairs what is safe."""

from __future__ import annotations

import uuid

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from transcript.integrity import transcript_problems
from transcript.leases import streams_interrupt_expired
from transcript.models import Message, MessageStatus

pytestmark = pytest.mark.django_db(transaction=True)

PAST = "2000-01-01T00:00:00Z"


def interrupted_mid_tool(conversation, make_turns):
    """A reply whose process died after storing a tool call but before its result."""
    _, reply = make_turns(conversation, ("user", "look it up"), ("assistant", "Let me check"))
    parts = [
        {"type": "tool_call", "call_id": "call_done", "name": "list_library", "arguments": "{}", "round": 0},
        {"type": "tool_result", "call_id": "call_done", "content": "{\"files\": []}", "is_error": False},
        {"type": "tool_call", "call_id": "call_lost", "name": "list_library", "arguments": "{}", "round": 1},
    ]
    Message.objects.filter(pk=reply.pk).update(status=MessageStatus.STREAMING, lease_expires_at=PAST, parts=parts)
    return reply


def paired_call_ids(body: dict) -> dict[str, int]:
    """call id -> how many results the request carries for it (both API selectors)."""
    counts: dict[str, int] = {}
    if "input" in body:  # Responses API
        for item in body["input"]:
            if item.get("type") == "function_call":
                counts.setdefault(item["call_id"], 0)
            elif item.get("type") == "function_call_output":
                counts[item["call_id"]] = counts.get(item["call_id"], 0) + 1
    else:  # Chat Completions
        for message in body["messages"]:
            for call in message.get("tool_calls") or []:
                counts.setdefault(call["id"], 0)
            if message["role"] == "tool":
                counts[message["tool_call_id"]] = counts.get(message["tool_call_id"], 0) + 1
    return counts


@pytest.mark.parametrize("selector", ["responses", "chat.completions"])
def test_interrupted_tool_call_gets_a_synthetic_result_and_the_next_request_is_well_paired(
    scripted_provider, make_conversation, make_turns, settings, selector
):
    settings.ELION_API_SELECTOR = selector
    conversation = make_conversation()
    reply = interrupted_mid_tool(conversation, make_turns)
    assert streams_interrupt_expired(conversation) == 1
    reply.refresh_from_db()
    synthetic = [p for p in reply.parts if p.get("synthetic")]
    assert [(p["type"], p["call_id"], p["is_error"]) for p in synthetic] == [("tool_result", "call_lost", True)]
    assert reply.status == MessageStatus.INTERRUPTED and reply.content == "Let me check"

    assert "data-synthetic-result" in Client().get(f"/c/{conversation.id}/").content.decode()  # shown as such
    scripted_provider.script({"text": "ok"})
    response = Client().post(
        f"/api/conversations/{conversation.id}/messages/?stream=false", {"content": "go on"},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert paired_call_ids(scripted_provider.last_request().body) == {"call_done": 1, "call_lost": 1}


def test_projection_pairs_an_unswept_interrupted_call_the_same_way():
    """Pure projection: the stored synthetic result and the fallback give the same request."""
    from transcript.tool_pairing import parts_closed, project_tool_parts

    parts = [{"type": "tool_call", "call_id": "c1", "name": "list_library", "arguments": "{}", "round": 0}]
    assert project_tool_parts(parts) == project_tool_parts(parts_closed(parts))
    assert [m["role"] for m in project_tool_parts(parts)] == ["assistant", "tool"]


def test_check_transcripts_reports_and_repairs_stale_streams_and_unpaired_calls(make_conversation, make_turns):
    conversation = make_conversation()
    reply = interrupted_mid_tool(conversation, make_turns)
    kinds = {p.kind for p in transcript_problems(conversation)}
    assert kinds == {"stale_stream"}
    with pytest.raises(CommandError):
        call_command("check_transcripts", "--conversation", str(conversation.id))
    call_command("check_transcripts", "--repair", "--conversation", str(conversation.id))  # exits 0: all fixed
    reply.refresh_from_db()
    assert reply.status == MessageStatus.INTERRUPTED
    assert transcript_problems(conversation) == []


def test_check_transcripts_closes_an_unpaired_call_on_a_failed_reply(make_conversation, make_turns):
    conversation = make_conversation()
    _, reply = make_turns(conversation, ("user", "q"), ("assistant", "a"))
    Message.objects.filter(pk=reply.pk).update(
        status=MessageStatus.FAILED,
        parts=[{"type": "tool_call", "call_id": "x", "name": "list_library", "arguments": "{}", "round": 0}],
    )
    assert [p.kind for p in transcript_problems(conversation)] == ["unpaired_tool_call"]
    call_command("check_transcripts", "--repair")
    reply.refresh_from_db()
    assert reply.parts[-1]["synthetic"] is True and transcript_problems(conversation) == []


def test_check_transcripts_moves_a_head_outside_its_conversation_to_a_sound_tip(make_conversation, make_turns):
    conversation, other = make_conversation(), make_conversation()
    _, reply = make_turns(conversation, ("user", "q"), ("assistant", "a"))
    (foreign,) = make_turns(other, ("user", "elsewhere"))
    type(conversation).objects.filter(pk=conversation.pk).update(head=foreign)
    conversation.refresh_from_db()
    assert [p.kind for p in transcript_problems(conversation)] == ["head_outside"]
    call_command("check_transcripts", "--repair", "--conversation", str(conversation.id))
    conversation.refresh_from_db()
    assert conversation.head_id == reply.id


def test_check_transcripts_reports_foreign_and_larger_seq_parents_and_exits_non_zero(make_conversation, make_turns):
    conversation, other = make_conversation(), make_conversation()
    first, second = make_turns(conversation, ("user", "q"), ("assistant", "a"))
    (foreign,) = make_turns(other, ("user", "elsewhere"))
    Message.objects.filter(pk=first.pk).update(parent=foreign)
    Message.objects.filter(pk=first.pk).update(seq=50)
    Message.objects.filter(pk=second.pk).update(seq=40)  # not above its parent's seq any more
    kinds = sorted(p.kind for p in transcript_problems(conversation))
    assert kinds == ["foreign_parent", "head_path", "parent_seq"]
    with pytest.raises(CommandError, match="remain"):
        call_command("check_transcripts", "--repair", "--conversation", str(conversation.id))


def test_check_transcripts_reports_an_orphan_parent(make_conversation, make_turns):
    from django.db import connection

    conversation = make_conversation()
    user, _ = make_turns(conversation, ("user", "q"), ("assistant", "a"))
    missing = uuid.uuid4()
    table = Message._meta.db_table
    with connection.constraint_checks_disabled():
        # Only a database without foreign-key enforcement (or a bad restore) can hold this.
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER ALL")
                cursor.execute(f"UPDATE {table} SET parent_id = %s WHERE id = %s", [missing, user.id])
                cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER ALL")
        else:
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA foreign_keys = OFF")
                cursor.execute(f"UPDATE {table} SET parent_id = %s WHERE id = %s", [missing.hex, user.id.hex])
                cursor.execute("PRAGMA foreign_keys = ON")
    assert sorted(p.kind for p in transcript_problems(conversation)) == ["head_path", "orphan_parent"]
