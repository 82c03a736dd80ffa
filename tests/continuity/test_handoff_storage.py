"""Stored handoff rows (seed "Legacy continuity rows") and their injection into the static prompt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.models import ThreadHandoff
from continuity.rules.handoff_store import handoff_blocks_for, handoff_limits
from continuity.rules.prompt_store import continuity_blocks, markers_are_current, policy_markers, static_prompt_ensure
from continuity.rules.thread_handoff_store import handoff_block_for, thread_handoff_source_ids, thread_handoffs_read
from continuity.services.branching import conversation_branch
from continuity.services.selectors import conversation_handoff_provenance
from elion.base.assistant_settings import assistant_settings_read
from transcript.append import APPENDED_FIELDS, message_append
from transcript.models import Conversation, Folder, Message, MessageKind, Role

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def prompt_of(conversation: Conversation) -> str:
    conversation.refresh_from_db()
    return static_prompt_ensure(conversation).content


def test_table_keeps_historical_name_and_retired_columns():
    assert ThreadHandoff._meta.db_table == "conversation_summaries"
    names = {field.name for field in ThreadHandoff._meta.get_fields()}
    assert {"destination", "source", "source_message_ids", "handoff", "policy_marker", "summary", "recent_raw"} <= names


def test_new_rows_store_exact_final_exchange_and_leave_retired_fields_empty(thread):
    source = thread(("user", 'Exact "text"\n  with  spacing'), ("assistant", "Reply ✨"), title="Source")
    destination = thread()
    row = ThreadHandoff.objects.get(destination=destination)
    assert row.source == source
    assert row.handoff == 'AUMA said:\nExact "text"\n  with  spacing\n\n---\n\nElion Voicefire said:\nReply ✨'
    assert row.summary == "" and row.recent_raw == ""
    assert row.source_message_ids == [str(m.id) for m in Message.objects.filter(conversation=source).order_by("seq")]
    assert row.policy_marker == policy_markers()["handoff_size_policy"]


def test_only_nonempty_handoff_is_injected(thread):
    source = thread(("user", "legacy user text"), ("assistant", "legacy reply"))
    destination = thread(persona="clipboard")  # Clipboard: no automatic row of its own
    destination.persona = "elion"
    destination.save()
    ThreadHandoff.objects.create(
        destination=destination, source=source, handoff="   ", summary="A generated summary of the old thread.",
        source_message_ids=[str(m.id) for m in Message.objects.filter(conversation=source)],
    )
    assert handoff_block_for(destination) == ""
    prompt = prompt_of(destination)
    assert "Continuity from a prior thread" not in prompt
    assert "generated summary" not in prompt and "legacy user text" not in prompt


def test_retired_summary_never_injected(thread):
    thread(("user", "the real final exchange"), ("assistant", "its reply"))
    destination = thread()
    ThreadHandoff.objects.filter(destination=destination).update(
        summary="RETIRED GENERATED SUMMARY", recent_raw="RETIRED RECENT RAW"
    )
    prompt = prompt_of(destination)
    assert '"the real final exchange"' in prompt
    assert "RETIRED" not in prompt


def test_stored_row_rebuilt_under_current_limits_before_injection(thread, settings):
    big = "B" * 5_000
    thread(("user", "short question"), ("assistant", big))
    destination = thread()
    row = ThreadHandoff.objects.get(destination=destination)
    assert big in row.handoff  # captured under the default 20,000 limit

    settings.HANDOFF_PER_MESSAGE_CHARACTER_LIMIT = 1_000
    block = handoff_block_for(destination)
    assert big not in block and "about 5,000 characters" in block
    assert '"short question"' in block
    row.refresh_from_db()
    assert big not in row.handoff and row.policy_marker.endswith(":1000:60000")


def test_older_oversized_row_cannot_bypass_the_active_budget(thread, settings):
    source = thread(("user", "q"), ("assistant", "A" * 3_000))
    destination = thread()
    # A row written under some larger past configuration, with text far above today's budget.
    ThreadHandoff.objects.filter(destination=destination).update(handoff="X" * 200_000)
    settings.HANDOFF_TOTAL_CHARACTER_BUDGET = 2_500
    block = handoff_block_for(destination)
    assert 0 < len(block) <= 2_500 and "X" * 10 not in block
    assert source.id  # the source rows, not the stored text, decided


def test_stale_handoff_size_marker_rebuilds_stored_prompt_before_reuse(thread, settings):
    thread(("user", "q"), ("assistant", "R" * 3_000))
    destination = thread()
    first = prompt_of(destination)
    assert "R" * 3_000 in first
    settings.HANDOFF_PER_MESSAGE_CHARACTER_LIMIT = 2_000
    stored = Message.objects.get(conversation=destination, role=Role.SYSTEM)
    assert not markers_are_current(stored)
    rebuilt = prompt_of(destination)
    assert "R" * 3_000 not in rebuilt and "about 3,000 characters" in rebuilt
    assert markers_are_current(Message.objects.get(conversation=destination, role=Role.SYSTEM))


def test_rebuilding_an_unchanged_prompt_keeps_its_boundary(thread):
    from continuity.rules.prompt_store import static_prompts_rebuild

    thread(("user", "q"), ("assistant", "r"))
    destination = thread()
    first = prompt_of(destination)
    assert static_prompts_rebuild([destination]) == 0
    assert prompt_of(destination) == first


def test_each_prompt_has_its_own_boundary(thread):
    thread(("user", "q"), ("assistant", "r"))
    one, two = thread(), thread()
    from continuity.rules.handoff_policy import boundary_id_in

    assert boundary_id_in(prompt_of(one)) != boundary_id_in(prompt_of(two))


@pytest.mark.parametrize("change", ["hidden_folder", "trashed", "shielded"])
def test_ineligible_source_is_not_injected(thread, change):
    source = thread(("user", "quarantined words"), ("assistant", "reply"))
    destination = thread()
    assert "quarantined words" in handoff_block_for(destination)
    if change == "hidden_folder":
        source.folder = Folder.objects.create(name="Hidden", hidden=True)
    else:
        setattr(source, change, True)
    source.save()
    assert handoff_block_for(destination) == ""
    assert "quarantined words" not in prompt_of(destination)


def test_rewound_away_messages_never_injected(thread, make_turns):
    from conversations.services.threads.thread_writes import conversation_rewind

    source = thread(("user", "kept question"), ("assistant", "kept answer"))
    make_turns(source, ("user", "later question"), ("assistant", "later answer"))
    destination = thread()
    assert "later answer" in handoff_block_for(destination)
    kept_answer = Message.objects.get(conversation=source, content="kept answer")
    conversation_rewind(conversation_id=source.id, message_id=kept_answer.id)
    block = handoff_block_for(destination)
    assert "kept answer" in block and "later" not in block


def test_model_facing_heading_has_no_source_title(thread):
    thread(("user", "q"), ("assistant", "r"), title="Secret Source Title")
    destination = thread()
    prompt = prompt_of(destination)
    assert "## Continuity from a prior thread" in prompt
    assert "Secret Source Title" not in prompt


def test_handoff_sits_in_the_continuity_slot_before_persona_integrity(thread):
    thread(("user", "q"), ("assistant", "r"))
    prompt = prompt_of(thread())
    assert prompt.index("## Continuity from a prior thread") < prompt.index("## Persona integrity")
    assert "recent activity" not in prompt.lower()


def test_blocks_for_many_conversations_take_a_fixed_number_of_queries(thread, django_assert_max_num_queries):
    thread(("user", "q"), ("assistant", "r"))
    destinations = [thread() for _ in range(12)]
    settings_row = assistant_settings_read()  # the operation reads it once, outside the budget
    with django_assert_max_num_queries(9):
        blocks = handoff_blocks_for([d.pk for d in destinations], settings_row=settings_row)
    assert len(blocks) == 12


def test_handoff_provenance_names_source_and_exact_message_ids(thread):
    source = thread(("user", "q"), ("assistant", "r"))
    destination = thread()
    ids = [str(m.id) for m in Message.objects.filter(conversation=source).order_by("seq")]
    assert conversation_handoff_provenance(destination) == {
        "source_conversation_id": str(source.id), "source_message_ids": ids,
    }
    assert conversation_handoff_provenance(source) is None


def test_invalid_env_limits_fall_back_to_defaults(tmp_path):
    """Set through the real environment: the settings module falls back, nothing fails."""
    env = {
        **os.environ,
        "HANDOFF_PER_MESSAGE_CHARACTER_LIMIT": "twenty thousand",
        "HANDOFF_TOTAL_CHARACTER_BUDGET": "-1",
        "ELION_DATA_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "elion.settings",
    }
    code = (
        "import django, json; django.setup(); from django.conf import settings; "
        "from continuity.rules.handoff_store import handoff_limits; l = handoff_limits(); "
        "print(json.dumps([settings.HANDOFF_PER_MESSAGE_CHARACTER_LIMIT, settings.HANDOFF_TOTAL_CHARACTER_BUDGET, "
        "l.per_message, l.total_budget]))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [20_000, 60_000, 20_000, 60_000]


@pytest.mark.parametrize("bad", ["abc", 0, -10, None])
def test_invalid_overridden_limits_never_make_new_chat_fail(thread, settings, bad):
    settings.HANDOFF_PER_MESSAGE_CHARACTER_LIMIT = bad
    settings.HANDOFF_TOTAL_CHARACTER_BUDGET = bad
    assert handoff_limits().per_message == 20_000 and handoff_limits().total_budget == 60_000
    thread(("user", "q"), ("assistant", "r"))
    destination = thread()
    assert '"q"' in prompt_of(destination)


def test_a_sends_one_read_of_its_handoffs_gives_the_blocks_and_recall_sources_of_the_separate_reads(thread):
    source = thread(("user", "The kite string snapped at the pier."), ("assistant", "It flew off east."), title="Kite")
    other = thread(("user", "unrelated"), ("assistant", "fine"), title="Other")
    branch, _ = conversation_branch(conversation_id=source.id, idempotency_key="k")
    # A historical bubble naming another source, and one whose recorded source is not an id.
    for metadata in ({"source_conversation_id": str(other.pk)}, {"source_conversation_id": "not-an-id"}):
        message_append(conversation=branch, parent=branch.head, role=Role.ASSISTANT, binding=None, make_head=True,
                       kind=MessageKind.HANDOFF_ARTIFACT, status="complete", content="### Continued", metadata=metadata)
    branch.save(update_fields=APPENDED_FIELDS)
    prompt = static_prompt_ensure(branch).content  # the blocks keep its boundary id
    settings_row = assistant_settings_read()

    handoffs = thread_handoffs_read(branch, Message.objects.filter(conversation=branch).exclude(role=Role.SYSTEM))
    assert handoffs.source_ids() == thread_handoff_source_ids(branch) == {source.pk, other.pk}
    blocks = handoffs.blocks(settings_row=settings_row, stored_prompt=prompt)
    assert blocks == continuity_blocks([branch.pk], settings_row)
    assert "The kite string snapped at the pier." in blocks[branch.pk] and blocks[branch.pk] in prompt
