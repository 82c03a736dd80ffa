"""Years of life (issue 40): a send's cost is bounded by what the model sees, never by how long the thread
has lived. Each message stores its place on its branch (`transcript.branch_columns`: depth, running token
measure, born), written by the append that adds it; a send reads only the stretch of its branch the
request can carry (`transcript.branch_rows`, `continuity.rules.history_window`), and nothing is kept
between sends.

The properties below compare, over random appends, edits, retries (siblings), rewinds, version switches,
forks, compactions, tool rounds and attachments:
* the stored columns with a walk of the whole branch from scratch;
* the request a send builds from its stretch with the request built from the whole live branch read
  afresh (the same trim chain, fixed by the stored measure).
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.models import Compaction
from continuity.rules.compaction import compaction_projection
from continuity.rules.dynamic_context import dynamic_context_build
from continuity.rules.history_window import history_window
from continuity.rules.request_policy import assemble_request, tool_definitions_text
from continuity.rules.request_store import reply_request_build, send_context_load, trim_step_tokens
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from elion.base.assistant_settings import assistant_settings_get
from tests.support.factories import orchard_thread, thread
from tests.support.prompt_sections import prior_thread_section_in
from transcript import branch_rows
from transcript.append import APPENDED_FIELDS, message_append
from transcript.attachments.manifests import attachments_commit, manifests_for
from transcript.attachments.projection import attachment_parts_verified
from transcript.attachments.upload import attachment_upload
from transcript.models import Message, MessageStatus, Role
from transcript.models.messages import ends_birth_period, stored_turn_tokens
from transcript.tree import live_branch, tree_messages, walk_to_root

pytestmark = pytest.mark.django_db(transaction=True)


def columns_from_scratch(conversation) -> dict:
    """Every row's branch columns, computed by walking its whole branch afresh."""
    rows = tree_messages(conversation)
    found = {}
    for message in rows.values():
        branch = walk_to_root(rows, message.id)
        above = branch[:-1]
        found[message.id] = (
            len(above),
            sum(stored_turn_tokens(m.role, m.content) for m in branch),
            any(ends_birth_period(m) for m in above),
        )
    return found


def columns_stored(conversation) -> dict:
    return {
        m.id: (m.branch_depth, m.branch_tokens, m.branch_born)
        for m in Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)
    }


STEP = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 10_000), st.sampled_from(["complete", "failed", "interrupted", "incomplete"]),
              st.text("abc xyz", min_size=0, max_size=60)),
    st.tuples(st.just("tools"), st.integers(0, 10_000), st.booleans(), st.booleans()),
    st.tuples(st.just("rewind"), st.integers(0, 10_000)),
    st.tuples(st.just("compact"), st.integers(0, 10_000)),
    st.tuples(st.just("undo_compaction")),
    st.tuples(st.just("attached"), st.integers(0, 10_000), st.booleans(), st.integers(1, 2)),
)


def apply_step(conversation, step) -> None:
    rows = list(Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM).order_by("seq"))
    pick = (lambda n: rows[n % len(rows)]) if rows else (lambda n: None)
    kind = step[0]
    if kind == "turn":
        # From the head, or (an edit or a retry: a sibling) from an older message.
        _, at, status, text = step
        parent = conversation.head if rows and at % 3 else pick(at)
        role = Role.ASSISTANT if parent is not None and parent.role == Role.USER else Role.USER
        message_append(conversation=conversation, parent=parent, role=role, binding=None, make_head=True,
                       status=status if role == Role.ASSISTANT else "complete", content=text)
        conversation.save(update_fields=APPENDED_FIELDS)
    elif kind == "tools" and rows:
        _, at, answered, reasoning = step
        target = next((m for m in rows[at % len(rows):] if m.role == Role.ASSISTANT), None)
        if target is not None:
            parts = [{"type": "reasoning", "id": f"rs_{at}", "encrypted_content": "enc", "summary": ["s"], "round": 0}] if reasoning else []
            parts.append({"type": "tool_call", "call_id": f"c{at}", "name": "list_library", "arguments": "{}", "round": 0})
            if answered:
                parts.append({"type": "tool_result", "call_id": f"c{at}", "content": "[]", "is_error": False})
            Message.objects.filter(pk=target.pk).update(parts=parts, updated_at=timezone.now())
    elif kind == "rewind" and rows:
        conversation.head = pick(step[1])  # a rewind, or a switch to another version
        conversation.save(update_fields=["head"])
    elif kind == "compact" and rows:
        Compaction.objects.create(conversation=conversation, through_message=pick(step[1]), summary="Summary so far.")
    elif kind == "undo_compaction":
        Compaction.objects.filter(conversation=conversation).delete()
    elif kind == "attached":
        _, at, with_text, files = step
        parent = conversation.head if rows and at % 3 else pick(at)
        if parent is not None and parent.role == Role.USER:
            return
        uploads = [
            attachment_upload(
                upload=SimpleUploadedFile(f"note-{at}-{n}.txt", f"Notes {at} {n} on the orchard. ".encode() * 8),
                conversation_id=conversation.id,
            )
            for n in range(files)
        ]
        user = message_append(conversation=conversation, parent=parent, role=Role.USER, binding=None, make_head=True,
                              content=f"See the notes {at}" if with_text else "")
        attachments_commit(message=user, attachment_ids=tuple(upload.id for upload in uploads))
        conversation.save(update_fields=APPENDED_FIELDS)


def request_from_the_whole_branch(conversation) -> str:
    """The request built from the whole live branch, read afresh (every row, every turn built anew)."""
    conversation.refresh_from_db()
    prompt = Message.objects.filter(conversation=conversation, role=Role.SYSTEM).first()
    branch = live_branch(conversation)
    compacted = compaction_projection(conversation, branch)
    manifests = manifests_for([m for m in branch if m.role == Role.USER])
    parts = attachment_parts_verified(conversation.id, manifests)
    start = compacted.compaction.through_message_id if compacted.compaction else None
    start_depth = next((m.branch_depth + 1 for m in branch if m.id == start), 0)
    anchor = next((m.branch_tokens for m in branch if m.id == start), 0)
    history = history_window(branch, attachment_parts=parts, start_depth=start_depth, anchor=anchor,
                             reaches_start=True, budget_tokens=0)
    static_prompt = prompt.content if prompt else ""
    settings_row = assistant_settings_get()
    dynamic = dynamic_context_build(conversation, branch=branch, static_prompt=static_prompt,
                                    history=history.texts, settings_row=settings_row)
    from django.conf import settings as django_settings

    request = assemble_request(
        static_prompt=static_prompt, history=history, dynamic_context=dynamic.text,
        handoff_text=prior_thread_section_in(static_prompt), tool_definitions_text=tool_definitions_text([]),
        input_budget_tokens=django_settings.ELION_INPUT_BUDGET_TOKENS, trim_step_tokens=trim_step_tokens(),
        birth_period=dynamic.birth_period, compacted_summary=compacted.summary_text,
        earlier_reasoning=django_settings.ELION_REASONING_CONTEXT == "all_turns",
    )
    first = history.first_kept(request.history_start) if request.history_start else None
    return json.dumps([request.messages, request.diagnostics, str(first.id) if first else None])


def request_from_the_stretch(conversation) -> str:
    conversation.refresh_from_db()
    context = send_context_load(conversation)
    request = reply_request_build(context, context.get(conversation.head_id), tools=[])
    return json.dumps([request.messages, request.diagnostics, request.in_view["first_message_id"]])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=25), budget=st.sampled_from([1_000, 1_200, 1_500, 200_000]),
       trim_step=st.sampled_from([Decimal(0), Decimal("0.05"), Decimal("0.25")]),
       reasoning_context=st.sampled_from(["current_turn", "all_turns"]))
def test_branch_columns_and_the_stretch_request_equal_a_walk_from_scratch(steps, budget, trim_step, reasoning_context,
                                                                          settings):
    settings.ELION_REASONING_CONTEXT = reasoning_context
    settings.ELION_INPUT_BUDGET_TOKENS = budget
    settings.ELION_TRIM_STEP = trim_step
    conversation = thread(("user", "Hello"), ("assistant", "Hi there"))
    for step in steps:
        apply_step(conversation, step)
        conversation.refresh_from_db()
        assert columns_stored(conversation) == columns_from_scratch(conversation)
        if conversation.head_id is None:
            continue
        assert request_from_the_stretch(conversation) == request_from_the_whole_branch(conversation)


def test_branch_columns_of_a_fork_and_a_finished_reply_equal_a_walk_from_scratch(client):
    """A fork copies its branch from the root (each copy's columns are its original's); a streamed reply's
    measure is added when it is finalised, before anything is appended under it."""
    from conversations.services.threads.fork import conversation_fork

    source = orchard_thread(12)
    prepared = send_prepare(SendCommand(conversation_id=source.id, content="One more question about pears?"))
    from conversations.sending.run import _finalise

    _finalise(prepared.assistant_message_id, "A finished answer about pears and plums.", MessageStatus.COMPLETE,
              parts=[], metadata={})
    source.refresh_from_db()
    assert columns_stored(source) == columns_from_scratch(source)
    fork, _created = conversation_fork(
        conversation_id=source.id, message_id=prepared.assistant_message_id, idempotency_key="fork-1"
    )
    assert columns_stored(fork) == columns_from_scratch(fork)


def statements_of_a_send(conversation, content: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        send_prepare(SendCommand(conversation_id=conversation.id, content=content))
    streaming = Message.objects.get(conversation=conversation, status="streaming")
    Message.objects.filter(pk=streaming.pk).update(
        status=MessageStatus.COMPLETE, content="Done.", lease_expires_at=None, updated_at=timezone.now()
    )
    return [query["sql"] for query in queries.captured_queries]


def test_a_sends_statement_count_is_the_same_at_10_and_4000_messages():
    counts = {}
    for turns in (10, 4_000):
        conversation = orchard_thread(turns)
        statements_of_a_send(conversation, "A first send stores the prompt.")
        counts[turns] = len(statements_of_a_send(conversation, "Then count a send."))
    assert counts[10] == counts[4_000], counts


@pytest.fixture
def rows_read(monkeypatch) -> list:
    """Every message row read from the database from now on (its values), in order: as a model instance, or
    as a send's plain stretch row (`transcript.branch_rows.StretchMessage`)."""
    read = []
    from_db = Message.from_db.__func__
    stretch_row = branch_rows.StretchMessage

    def counting(cls, db, field_names, values):
        read.append(values)
        return from_db(cls, db, field_names, values)

    def stretch_row_counted(*values):
        read.append(values)
        return stretch_row(*values)

    monkeypatch.setattr(Message, "from_db", classmethod(counting))
    monkeypatch.setattr(branch_rows, "StretchMessage", stretch_row_counted)
    return read


def test_a_send_reads_the_stretch_its_request_can_carry_not_the_thread(rows_read, settings):
    """With a 4,000-token budget a send of a 4,000-message thread reads about the rows that fit (the
    budget, twice the trim step and a margin, in stored tokens), never the thread."""
    settings.ELION_INPUT_BUDGET_TOKENS = 4_000
    conversation = orchard_thread(4_000)
    send_prepare(SendCommand(conversation_id=conversation.id, content="A first send stores the prompt."))
    Message.objects.filter(conversation=conversation, status="streaming").update(
        status=MessageStatus.COMPLETE, content="Done.", lease_expires_at=None)
    rows_read.clear()
    send_prepare(SendCommand(conversation_id=conversation.id, content="How many rows does this read?"))
    assert 10 < len(rows_read) < 400, len(rows_read)


def test_a_new_chats_handoff_reads_the_sources_final_messages_not_the_thread(rows_read):
    """New Chat's final-eight handoff reads the newest end of its source's live branch (64 messages, more
    only while they hold fewer than eight eligible ones), never the whole source thread."""
    from continuity.rules.handoff_store import live_branch_handoff

    source = orchard_thread(2_000)
    rows_read.clear()
    handoff = live_branch_handoff(source, settings_row=assistant_settings_get())
    assert len(handoff.turns) == 8 and handoff.turns[-1].message.content.startswith("Answer 999 ")
    assert len(rows_read) <= 64, len(rows_read)
