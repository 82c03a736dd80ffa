"""Seed 004: "A crash, disconnect, partial stream, or interrupted write must either resume coherently or
explain why recovery is impossible." Every place that walks the live branch walks it one way
(`transcript.tree.walk_up`, or inside the database checked by the same `tree_break`): a step to a parent
that is missing, in another conversation, or not below it in seq raises `BrokenTree` naming that step,
never a partial branch; `transcript.integrity` reports the same step.

Each place is tested on the same broken trees (`tests.support.broken_trees`); the database walks give the
same answer as `walk_up` over the same rows, broken or sound.
"""

from __future__ import annotations

from itertools import islice

import pytest
from django.test import Client

from continuity.models import ThreadHandoff
from continuity.rules.handoff_store import handoff_blocks_for
from continuity.rules.request_policy import estimate_tokens
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import NotFound
from tests.support.broken_trees import BREAKS
from tests.support.factories import thread, turns_append
from transcript import branch_window
from transcript.branch_rows import StretchMessage, branch_stretch_up
from transcript.integrity import transcript_problems
from transcript.models import Message, Role
from transcript.tree import BrokenTree, live_ids_among, tree_messages, tree_problems, walk_to_root, walk_up

pytestmark = pytest.mark.django_db


def outcome(call):
    """What a walk answered: its value, or the broken step it named."""
    try:
        return ("answered", call())
    except BrokenTree as broken:
        return ("broken", broken.step)


@pytest.mark.parametrize("kind", BREAKS)
def test_a_broken_step_is_explained_by_walk_to_root_never_read_partially(make_broken_thread, kind):
    broken = make_broken_thread(kind)
    with pytest.raises(BrokenTree) as raised:
        walk_to_root(tree_messages(broken.conversation), broken.conversation.head_id)
    assert raised.value.step.message_id == broken.broken_at.id
    assert raised.value.status == 409 and raised.value.code == "broken_transcript"
    assert str(broken.conversation.id) in raised.value.detail
    # Above the broken step (towards the root) the branch is sound and is read whole.
    above = broken.messages[1]
    assert [m.id for m in walk_to_root(tree_messages(broken.conversation), above.id)] == [
        m.id for m in broken.messages[:2]
    ]


@pytest.mark.parametrize("kind", BREAKS)
def test_a_broken_step_is_explained_by_the_sends_stretch_read(make_broken_thread, kind):
    """A send reads its branch up from the tip by the stored branch columns (`transcript.branch_rows`): a
    broken step on the way names the same step `walk_to_root` names."""
    broken = make_broken_thread(kind)
    expected = outcome(lambda: walk_to_root(tree_messages(broken.conversation), broken.conversation.head_id))
    assert expected[0] == "broken" and expected[1].message_id == broken.broken_at.id
    # A whole walk, and one with a row limit the break lies within (the handoff's read).
    for max_rows in ({}, {"max_rows": len(broken.messages)}):
        read = outcome(lambda max_rows=max_rows: branch_stretch_up(
            broken.conversation.id, broken.conversation.head_id, token_floor=-1, **max_rows))
        assert read[0] == "broken" and read[1].message_id == broken.broken_at.id, max_rows


STRETCH_COLUMNS = [
    name for name in StretchMessage.__dataclass_fields__ if not name.startswith("stored_")
] + ["metadata", "created_at"]


def test_a_sends_plain_stretch_rows_carry_what_the_model_instances_carry():
    """A send reads its stretch as plain rows (`branch_stretch_up`), not model instances: every column it
    reads, JSON ones included (tool rounds in `parts`, an app event's and a pinned turn's `metadata`, empty
    ones), equals the model's value, row for row, on either database's driver."""
    conversation = thread(("user", "Hello"), ("assistant", "Hi"))
    tail = conversation.head
    tail.parts = [{"type": "function_call", "call_id": "c1", "name": "search_past", "arguments": "{\"q\": \"pears\"}"}]
    tail.metadata = {"diagnostics": {"estimated_tokens": 12, "nested": [1, {"x": None}]}}
    tail.save(update_fields=["parts", "metadata"])
    conversation.refresh_from_db()
    turns_append(conversation, ("user", "Pinned question"), metadata={"pinned_character": 7, "voice": True})
    turns_append(conversation, ("assistant", "Übersetzt — ünïcode ✓"), ("user", ""))
    conversation.refresh_from_db()
    plain = branch_stretch_up(conversation.id, conversation.head_id, token_floor=-1, with_times=True)
    by_id = Message.objects.in_bulk([row.id for row in plain])
    models = [by_id[row.id] for row in plain]
    assert len(plain) == len(models) == 5 and [m.branch_depth for m in models] == [0, 1, 2, 3, 4]
    for row, model in zip(plain, models, strict=True):
        assert {name: getattr(row, name) for name in STRETCH_COLUMNS} == {
            name: getattr(model, name) for name in STRETCH_COLUMNS
        }, model.id
    assert plain[1].parts[0]["call_id"] == "c1" and plain[2].metadata["pinned_character"] == 7
    assert plain[0].created_at.tzinfo is not None and plain[0].created_at == models[0].created_at
    # A row limit reads the newest rows only.
    newest = branch_stretch_up(conversation.id, conversation.head_id, token_floor=-1, max_rows=2)
    assert [row.id for row in newest] == [row.id for row in plain[-2:]]
    assert newest[0].created_at is None, "a send's read leaves the times unread"


@pytest.mark.parametrize("kind", BREAKS)
def test_a_broken_handoff_source_carries_nothing_and_holds_no_other_thread_hostage(make_broken_thread, kind):
    """The walk over a broken source refuses it (never a partial branch); the destination's prompt is built
    without that source's exchange, and the other sources still carry theirs."""
    broken = make_broken_thread(kind)
    sound = thread(("user", "a sound thread's question"), ("assistant", "a sound thread's answer"))
    destinations = {}
    for source in (broken.conversation, sound):
        destination = destinations[source.id] = thread()
        ThreadHandoff.objects.filter(destination=destination).delete()
        ThreadHandoff.objects.create(
            destination=destination, source=source, handoff="as captured",
            source_message_ids=[str(m.id) for m in Message.objects.filter(conversation=source)],
        )
    with pytest.raises(BrokenTree):
        list(walk_up({m.id: m for m in Message.objects.filter(conversation=broken.conversation)},
                     broken.conversation.head_id))
    blocks = handoff_blocks_for([d.id for d in destinations.values()], settings_row=assistant_settings_read())
    assert "a sound thread's answer" in blocks.get(destinations[sound.id].id, "")
    from_broken = blocks.get(destinations[broken.conversation.id].id, "")
    assert not any(f"turn {i}" in from_broken for i in range(10)), "nothing of the broken source is carried"


def test_a_broken_conversation_is_left_out_of_past_search_and_the_others_still_answer(make_broken_thread):
    from conversations.services.visibility.past_search import past_conversation_search

    broken = make_broken_thread("orphan_parent")
    Message.objects.filter(conversation=broken.conversation).update(content="lantern in the broken thread")
    sound = thread(("user", "lantern in the sound thread"), ("assistant", "noted"))
    hits = past_conversation_search("lantern")
    assert {hit.conversation_id for hit in hits} == {sound.id}


@pytest.mark.parametrize("kind", BREAKS)
def test_integrity_reports_the_step_every_walk_refuses(make_broken_thread, kind):
    broken = make_broken_thread(kind)
    problems = transcript_problems(broken.conversation)
    (walk,) = [p for p in problems if p.kind == "head_path"]
    (step,) = [p for p in problems if p.message_id == broken.broken_at.id and p.kind != "head_path"]
    refused = outcome(lambda: walk_to_root(tree_messages(broken.conversation), broken.conversation.head_id))[1]
    assert walk.detail == f"the walk from the head breaks: {refused.detail}"
    assert step.kind == kind and not step.repairable  # integrity looks beyond the conversation for the parent
    assert refused.detail in tree_problems(broken.conversation.id, tree_messages(broken.conversation).values())


@pytest.mark.parametrize("page", ["", "?limit=3", "?limit=30"])
def test_a_broken_tree_is_a_409_explained_at_the_messages_route(make_broken_thread, client: Client, page):
    broken = make_broken_thread("orphan_parent")
    response = client.get(f"/api/conversations/{broken.conversation.id}/messages/{page}")
    if page == "?limit=3":  # the newest three lie above the broken step: the window reads
        assert response.status_code == 200 and len(response.json()["results"]) == 3
        return
    assert response.status_code == 409
    assert response.json()["error"] == "broken_transcript"
    assert str(broken.broken_at.id) in response.json()["detail"]


def test_a_broken_tree_is_a_409_explained_at_the_chat_page(make_broken_thread, client: Client):
    """The page walks the newest 50 messages (its window); a broken step among them is a 409 there. A break
    further up is met, and explained, by the walk that reaches it (an earlier window, an export, a send whose
    stretch reaches it): the page no longer walks the whole branch for its header estimate (issue 40)."""
    broken = make_broken_thread("orphan_parent", length=60, at=40)
    response = client.get(f"/c/{broken.conversation.id}/")
    assert response.status_code == 409
    assert "broken" in response.content.decode()


def test_a_broken_step_above_the_page_is_a_409_where_the_earlier_window_reaches_it(make_broken_thread, client: Client):
    broken = make_broken_thread("orphan_parent", length=60, at=2)
    assert client.get(f"/c/{broken.conversation.id}/").status_code == 200
    oldest_shown = broken.messages[10]
    response = client.get(f"/c/{broken.conversation.id}/window/", {"before": str(oldest_shown.id), "limit": 50})
    assert response.status_code == 409
    assert "broken" in response.content.decode()


@pytest.mark.parametrize("export_format", ["markdown", "json"])
def test_a_broken_tree_is_a_409_explained_before_an_export_streams(make_broken_thread, client: Client, export_format):
    broken = make_broken_thread("orphan_parent")
    response = client.get(f"/api/conversations/{broken.conversation.id}/export/", {"format": export_format})
    assert response.status_code == 409 and not response.streaming
    assert response.json()["error"] == "broken_transcript"


# --- The database walks give `walk_up`'s answer over the same trees -------------------------------


def reference_window_newest(tree, head_id, limit):
    walked = [m.id for m in islice(walk_up(tree, head_id), limit + 1)]
    return list(reversed(walked[:limit])), len(walked) > limit


def reference_path_to(tree, head_id, cursor):
    """Head → cursor (nearest first), or NotFound when the walk from the head passes it by."""
    path = [m.id for m in walk_up(tree, head_id, until=lambda pk: tree[pk].seq < cursor.seq)]
    if not path or path[-1] != cursor.id:
        raise NotFound("not on the live branch", code="message_not_found")
    return path


def reference_window_around(tree, head_id, cursor, limit):
    after = list(reversed(reference_path_to(tree, head_id, cursor)[:-1]))[:limit]
    before = [m.id for m in islice(walk_up(tree, cursor.id), limit + 1)][1:]
    take_before, take_after = branch_window.around_split(limit, len(before), len(after))
    window = list(reversed(before[:take_before])) + [cursor.id] + after[:take_after]
    return window, len(before) > take_before, len(after) > take_after


def database_and_reference(conversation):
    """(database walk, the same answer from `walk_up` over the conversation's rows) for every database walk."""
    tree = tree_messages(conversation)
    head = conversation.head_id
    by_seq = sorted(tree.values(), key=lambda m: m.seq)
    cursor, low = by_seq[-3], by_seq[1]

    def window(w):
        return [m.id for m in w.messages], w.has_more_before

    def around(w):
        return [m.id for m in w.messages], w.has_more_before, w.has_more_after

    roles = (Role.USER, Role.ASSISTANT)
    return {
        "newest, near": (lambda: window(branch_window.branch_window_newest(conversation, limit=2)),
                         lambda: reference_window_newest(tree, head, 2)),
        "newest, far": (lambda: window(branch_window.branch_window_newest(conversation, limit=50)),
                        lambda: reference_window_newest(tree, head, 50)),
        "around": (lambda: around(branch_window.branch_window_around(conversation, cursor_id=cursor.id, limit=3)),
                   lambda: reference_window_around(tree, head, cursor, 3)),
        "around, far": (lambda: around(branch_window.branch_window_around(conversation, cursor_id=low.id, limit=3)),
                        lambda: reference_window_around(tree, head, low, 3)),
        "start": (lambda: [m.id for m in branch_window.branch_window_start(conversation, limit=3).messages],
                  lambda: [m.id for m in walk_to_root(tree, head)][:3]),
        "tokens": (lambda: branch_window.branch_token_estimate(conversation, roles),
                   lambda: sum(estimate_tokens(m.content) for m in walk_to_root(tree, head) if m.role in roles)),
        "on the branch": (lambda: branch_window.on_live_branch(conversation, low),
                          lambda: low.id in reference_path_to(tree, head, low)),
        "rows to the head": (lambda: [m.id for m in branch_window.branch_rows_to(conversation, head, "content")],
                             lambda: [m.id for m in walk_to_root(tree, head)]),
        "rows below": (lambda: [m.id for m in branch_window.branch_rows_to(conversation, low.id, "content")],
                       lambda: [m.id for m in walk_to_root(tree, low.id)]),
        "batches": (lambda: [m.id for batch in branch_window.live_branch_batches(conversation, batch_size=3) for m in batch],
                    lambda: [m.id for m in walk_to_root(tree, head)]),
        "live ids": (lambda: live_ids_among(list(tree), [head]),
                     lambda: {m.id for m in walk_to_root(tree, head)}),
    }


@pytest.mark.parametrize("kind", ["sound", *BREAKS])
def test_the_database_walks_give_walk_ups_answer_on_sound_and_broken_trees(make_broken_thread, kind):
    if kind == "sound":
        conversation = thread(*[("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(10)])
    else:
        conversation = make_broken_thread(kind).conversation
    answers = {
        name: (outcome(database), outcome(reference))
        for name, (database, reference) in database_and_reference(conversation).items()
    }
    assert {name: database for name, (database, _) in answers.items()} == {
        name: reference for name, (_, reference) in answers.items()
    }
    broke = {name for name, (database, _) in answers.items() if database[0] == "broken"}
    if kind == "sound":
        assert broke == set()
    else:
        # The walks that reach the broken step (4 steps up from the root of 10) refuse; the short ones answer.
        assert broke == {"newest, far", "around, far", "start", "tokens", "on the branch", "rows to the head",
                         "batches", "live ids"}


def test_a_walk_reads_one_conversation_a_parent_elsewhere_is_not_followed(make_broken_thread):
    broken = make_broken_thread("foreign_parent")
    elsewhere = Message.objects.get(pk=Message.objects.get(pk=broken.broken_at.pk).parent_id)
    assert elsewhere.conversation_id != broken.conversation.id
    with pytest.raises(BrokenTree) as raised:
        live_ids_among([elsewhere.id], [broken.conversation.head_id])
    assert raised.value.step.message_id == broken.broken_at.id
