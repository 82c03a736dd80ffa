"""Send cost flat in thread length (issue "Long threads stay fast"): a process keeps the rows of its
conversations (`transcript.tree_cache`) and asks the database only what changed, and a
finished message is projected into a history turn once. The request built from the kept rows must be
exactly the request the earlier code built from freshly read rows: the property test below builds both
over random trees, budgets, tool pairs, reasoning, compactions, statuses and attachments (turns with
files, and turns of files only), and since the history is kept between sends (`continuity.rules.kept_history`),
over the same conversation send after send.
"""

from __future__ import annotations

import datetime
import json
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.models import Compaction
from continuity.rules.compaction import compaction_projection
from continuity.rules.dynamic_context import dynamic_context_build
from continuity.rules.request_policy import HistoryTurn, assemble_request, tool_definitions_text
from continuity.rules.request_store import reply_request_build, send_context_load
from conversations.models import Message, MessageStatus, Role
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from tests.support.factories import thread
from tests.support.prompt_sections import prior_thread_section_in
from transcript import tree_cache
from transcript.append import APPENDED_FIELDS, message_append
from transcript.assistant_settings import assistant_settings_get
from transcript.attachments.manifests import attachments_commit, manifests_for
from transcript.attachments.projection import attachment_parts_verified
from transcript.attachments.upload import attachment_upload
from transcript.tool_pairing import interrupted_tool_calls_close, project_tool_parts
from transcript.tree import is_projectable, live_branch

pytestmark = pytest.mark.django_db(transaction=True)

AN_HOUR_AGO = datetime.timedelta(hours=1)


def long_thread(turns: int, **kwargs):
    pairs = []
    for n in range(turns // 2):
        pairs += [("user", f"Question {n} about the orchard " * 3), ("assistant", f"Answer {n} about pears " * 4)]
    return thread(*pairs, **kwargs)


def age_every_row(conversation) -> None:
    """The thread's rows as in a thread of months: written long ago, the newest an hour ago."""
    rows = Message.objects.filter(conversation=conversation)
    rows.update(updated_at=timezone.now() - datetime.timedelta(days=30))
    newest = rows.order_by("-seq").first()
    if newest is not None:
        rows.filter(pk=newest.pk).update(updated_at=timezone.now() - AN_HOUR_AGO)


def as_stored(rows) -> dict:
    return {
        m.id: (m.parent_id, m.role, m.status, m.content, json.dumps(m.parts), json.dumps(m.metadata), m.provider_id)
        for m in rows
    }


def assert_current(conversation) -> None:
    kept = tree_cache.conversation_rows(conversation)
    assert as_stored(kept.values()) == as_stored(Message.objects.filter(conversation=conversation))


def test_tree_cache_kept_rows_stay_current_after_every_kind_of_write():
    conversation = long_thread(40)
    age_every_row(conversation)
    tree_cache.tree_cache_clear()
    assert_current(conversation)  # read whole, kept
    assert tree_cache.tree_cache_size() == 40
    # A new turn.
    reply = message_append(conversation=conversation, parent=conversation.head, role=Role.USER, binding=None,
                           make_head=True, content="And now?")
    conversation.save(update_fields=APPENDED_FIELDS)
    assert_current(conversation)
    # A streaming reply, its partial text and a lease renewal (which moves no updated_at).
    streaming = message_append(conversation=conversation, parent=reply, role=Role.ASSISTANT, binding=None,
                               make_head=True, status=MessageStatus.STREAMING, content="")
    conversation.save(update_fields=APPENDED_FIELDS)
    assert_current(conversation)
    Message.objects.filter(pk=streaming.pk).update(content="Part", lease_expires_at=timezone.now())
    assert_current(conversation)
    # It ends interrupted with an unpaired tool call, closed by the repair; an old row's parts change too.
    old = Message.objects.filter(conversation=conversation, role=Role.ASSISTANT).order_by("seq").first()
    Message.objects.filter(pk__in=[streaming.pk, old.pk]).update(
        status=MessageStatus.INTERRUPTED, parts=[{"type": "tool_call", "call_id": "c1", "name": "x", "arguments": "{}"}],
        updated_at=timezone.now(),
    )
    assert_current(conversation)
    interrupted_tool_calls_close([streaming.pk, old.pk])
    assert_current(conversation)


@pytest.fixture
def rows_read(monkeypatch) -> list:
    """Every message row read from the database from now on (its values), in order."""
    read = []
    from_db = Message.from_db.__func__

    def counting(cls, db, field_names, values):
        read.append(values)
        return from_db(cls, db, field_names, values)

    monkeypatch.setattr(Message, "from_db", classmethod(counting))
    return read


def test_tree_cache_a_send_reads_only_the_rows_that_changed(rows_read):
    conversation = long_thread(2_000)
    age_every_row(conversation)
    tree_cache.tree_cache_clear()
    read = rows_read
    send_prepare(SendCommand(conversation_id=conversation.id, content="The first send reads the thread once."))
    assert len(read) >= 2_000
    Message.objects.filter(pk=Message.objects.get(conversation=conversation, status="streaming").pk).update(
        status=MessageStatus.COMPLETE, content="Done.", lease_expires_at=None, updated_at=timezone.now()
    )
    read.clear()
    send_prepare(SendCommand(conversation_id=conversation.id, content="The next one reads what changed."))
    assert len(read) < 10, len(read)


def statements_of_a_send(conversation, content: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        send_prepare(SendCommand(conversation_id=conversation.id, content=content))
    streaming = Message.objects.get(conversation=conversation, status="streaming")
    Message.objects.filter(pk=streaming.pk).update(
        status=MessageStatus.COMPLETE, content="Done.", lease_expires_at=None, updated_at=timezone.now()
    )
    return [query["sql"] for query in queries.captured_queries]


def test_a_sends_statement_count_does_not_grow_with_thread_length():
    counts = {}
    for turns in (10, 2_000):
        conversation = long_thread(turns)
        age_every_row(conversation)
        statements_of_a_send(conversation, "Warm the kept copy.")
        counts[turns] = len(statements_of_a_send(conversation, "Then count a send."))
    assert counts[10] == counts[2_000], counts


# --- The property: kept rows and the once-built turns give the earlier code's request ------------------


def reference_request(conversation, budget: int, step: Decimal = Decimal(0)) -> list[dict] | str:
    """The request as the code before the tree cache built it: every row read afresh, every turn built anew."""
    conversation.refresh_from_db()
    rows = list(Message.objects.filter(conversation=conversation))
    prompt = next((m for m in rows if m.role == Role.SYSTEM), None)
    branch = live_branch(conversation)
    compacted = compaction_projection(conversation, branch)
    manifests = manifests_for([m for m in branch if m.role == Role.USER])
    parts = attachment_parts_verified(conversation.id, manifests)
    history = [
        HistoryTurn(m.role, m.content, tuple(project_tool_parts(m.parts)), parts.get(m.id, ()))
        for m in compacted.branch_after
        if is_projectable(m, has_attachments=m.id in parts)
    ]
    static_prompt = prompt.content if prompt else ""
    dynamic = dynamic_context_build(conversation, branch=branch, static_prompt=static_prompt,
                                    history=[t.content for t in history], settings_row=assistant_settings_get())
    request = assemble_request(
        static_prompt=static_prompt, history=history, dynamic_context=dynamic.text,
        handoff_text=prior_thread_section_in(static_prompt), tool_definitions_text=tool_definitions_text([]),
        input_budget_tokens=budget, trim_step_tokens=int(budget * step), birth_period=dynamic.birth_period,
        compacted_summary=compacted.summary_text,
        earlier_reasoning=django_settings.ELION_REASONING_CONTEXT == "all_turns",
    )
    return json.dumps([request.messages, request.diagnostics])


def kept_request(conversation, budget: int, settings_override, step: Decimal = Decimal(0)) -> str:
    conversation.refresh_from_db()
    settings_override.ELION_INPUT_BUDGET_TOKENS = budget
    settings_override.ELION_TRIM_STEP = step
    context = send_context_load(conversation)
    request = reply_request_build(context, branch=context.branch_to(conversation.head_id), tools=[])
    return json.dumps([request.messages, request.diagnostics])


STEP = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 10_000), st.sampled_from(["complete", "failed", "interrupted", "incomplete"]),
              st.text("abc xyz", min_size=0, max_size=60)),
    st.tuples(st.just("tools"), st.integers(0, 10_000), st.booleans(), st.booleans()),
    st.tuples(st.just("rewind"), st.integers(0, 10_000)),
    st.tuples(st.just("compact"), st.integers(0, 10_000)),
    st.tuples(st.just("undo_compaction")),
    st.tuples(st.just("age")),
    st.tuples(st.just("attached"), st.integers(0, 10_000), st.booleans(), st.integers(1, 2)),
)


def apply_step(conversation, step) -> None:
    rows = list(Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM).order_by("seq"))
    pick = (lambda n: rows[n % len(rows)]) if rows else (lambda n: None)
    kind = step[0]
    if kind == "turn":
        _, at, status, text = step
        parent = conversation.head if rows and at % 3 else pick(at)  # mostly from the head, sometimes a branch
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
        conversation.head = pick(step[1])
        conversation.save(update_fields=["head"])
    elif kind == "compact" and rows:
        Compaction.objects.create(conversation=conversation, through_message=pick(step[1]), summary="Summary so far.")
    elif kind == "undo_compaction":
        Compaction.objects.filter(conversation=conversation).delete()
    elif kind == "age":
        age_every_row(conversation)
    elif kind == "attached":
        # A user turn with files (text or only files), from the head or, sometimes, after an older reply.
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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=25), budget=st.sampled_from([1_000, 1_200, 1_500, 200_000]),
       trim_step=st.sampled_from([Decimal(0), Decimal("0.05"), Decimal("0.25")]),
       reasoning_context=st.sampled_from(["current_turn", "all_turns"]))
def test_projection_from_kept_rows_equals_the_earlier_projection(steps, budget, trim_step, reasoning_context, settings):
    """Also with a trim step: the kept turns are trimmed to the same chain point as the whole list."""
    settings.ELION_REASONING_CONTEXT = reasoning_context
    conversation = thread(("user", "Hello"), ("assistant", "Hi there"))
    for step in steps:
        apply_step(conversation, step)
        conversation.refresh_from_db()
        if conversation.head_id is None:
            continue
        settings.ELION_INPUT_BUDGET_TOKENS = budget
        assert kept_request(conversation, budget, settings, trim_step) == reference_request(
            conversation, budget, trim_step
        )


# --- A thread made ready when its page opens (`conversations.sending.warm`) -----------------------------


def test_a_warmed_threads_first_send_reads_only_the_rows_that_changed(request):
    """The first send of a long thread in a process reads and projects it whole; after `thread_warm`
    (which the page's WebSocket asks for as it opens) that send reads only what changed and extends the
    warmed history instead of projecting the thread again."""
    from continuity.rules import kept_history
    from conversations.sending.warm import thread_warm

    conversation = long_thread(2_000)
    age_every_row(conversation)
    tree_cache.tree_cache_clear()
    kept_history.kept_history_clear()
    assert thread_warm(conversation.id)
    warmed = kept_history._KEPT[conversation.id]
    read = request.getfixturevalue("rows_read")  # counted from here on
    send_prepare(SendCommand(conversation_id=conversation.id, content="The first send after the page opened."))
    assert len(read) < 10, len(read)
    sent = kept_history._KEPT[conversation.id]
    assert sent.lineage is warmed.lineage and sent.turns[: len(warmed.turns)] == warmed.turns


def test_a_short_thread_is_not_warmed(settings):
    from conversations.sending.warm import thread_warm

    settings.ELION_TREE_CACHE_MIN_ROWS = 200
    conversation = long_thread(10)
    tree_cache.tree_cache_clear()
    assert not thread_warm(conversation.id)
    assert tree_cache.tree_cache_size() == 0
    assert not thread_warm("8f9c4a5e-0000-4000-8000-000000000000")  # no such conversation: nothing, no error


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=20), after=st.lists(STEP, max_size=3),
       budget=st.sampled_from([1_000, 1_500, 200_000]))
def test_projection_after_a_warm_equals_the_earlier_projection(steps, after, budget, settings):
    """A warm (cold caches, then `send_context_warm`) changes nothing a send builds: the request after it,
    and after more steps on top of it, is the earlier code's request for the same rows."""
    from continuity.rules import kept_history
    from continuity.rules.request_store import send_context_warm

    conversation = thread(("user", "Hello"), ("assistant", "Hi there"))
    for step in steps:
        apply_step(conversation, step)
    conversation.refresh_from_db()
    if conversation.head_id is None:
        return
    tree_cache.tree_cache_clear()
    kept_history.kept_history_clear()
    send_context_warm(conversation)
    for step in [None, *after]:
        if step is not None:
            apply_step(conversation, step)
            conversation.refresh_from_db()
            if conversation.head_id is None:
                return
        settings.ELION_INPUT_BUDGET_TOKENS = budget
        assert kept_request(conversation, budget, settings) == reference_request(conversation, budget)
