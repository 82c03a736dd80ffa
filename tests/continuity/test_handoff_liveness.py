"""Seed 000, Layer 3: "Stored handoff rows are rebuilt from their eligible source messages under the current
limits before prompt injection": only captured messages still on the source's live branch are rebuilt.
Issue 40: that judgement reads the source's branch from its head down to the oldest captured message
(`continuity.rules.handoff_liveness`), never the source's whole history; it is the judgement of a walk
of the whole stored tree (`live_ids_whole`, the walk before issue 40) on every tree the app's own
operations make (appends, edits and retries, rewinds and version switches, forks, deletions), and on
every broken step the handoff's stretch contains (seed 004: a broken source carries nothing, recorded per
source).
"""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.backends.utils import CursorWrapper
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.models import ThreadHandoff
from continuity.rules.handoff_liveness import SourceWalk, live_ids_by_source, live_ids_whole
from continuity.rules.handoff_store import handoff_blocks_for
from elion.base.assistant_settings import assistant_settings_read
from tests.support.broken_trees import BREAKS, broken_thread, parent_restored
from tests.support.factories import thread, turns_append
from transcript.models import Message, Role
from transcript.tree import walk_to_root

pytestmark = pytest.mark.django_db


def rows_of(conversation) -> list[Message]:
    return list(Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM).order_by("seq"))


def final_eight(conversation) -> list[str]:
    """What a capture records: the newest eight messages of the live branch."""
    conversation.refresh_from_db()
    if conversation.head_id is None:
        return []
    branch = walk_to_root({m.id: m for m in rows_of(conversation)}, conversation.head_id)
    return [str(m.id) for m in branch[-8:]]


def walk_of(conversation, captured: list[str]) -> SourceWalk | None:
    """The walk `handoff_store` asks for: from the head down to the shallowest captured message stored in it."""
    conversation.refresh_from_db()
    depths = [m.branch_depth for m in Message.objects.filter(pk__in=captured, conversation=conversation)
              .exclude(role=Role.SYSTEM)]
    if not depths or conversation.head_id is None:
        return None
    return SourceWalk(head_id=conversation.head_id, depth_floor=min(depths))


STEP = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 10_000)),  # from the head, or (an edit, a retry) a sibling
    st.tuples(st.just("rewind"), st.integers(0, 10_000)),  # a rewind, or a switch to another version
    st.tuples(st.just("capture"), st.integers(0, 10_000)),  # a handoff captured now (the final eight)
    st.tuples(st.just("fork"), st.integers(0, 10_000)),  # the live branch up to a message, as a new source
    st.tuples(st.just("delete"), st.integers(0, 10_000)),  # a leaf off the live branch removed
)


def apply_step(sources: list, captures: list, step) -> None:
    conversation = sources[step[1] % len(sources)]
    conversation.refresh_from_db()
    rows = rows_of(conversation)
    pick = rows[step[1] % len(rows)] if rows else None
    kind = step[0]
    if kind == "turn":
        parent = conversation.head if not rows or step[1] % 3 else pick
        role = Role.ASSISTANT if parent is not None and parent.role == Role.USER else Role.USER
        turns_append(conversation, (role, f"turn {step[1]}"), parent=parent)
    elif kind == "rewind" and rows:
        conversation.head = pick
        conversation.save(update_fields=["head"])
    elif kind == "capture" and rows:
        captures.append((conversation, final_eight(conversation)))
    elif kind == "fork" and conversation.head_id is not None:
        from conversations.services.threads.fork import conversation_fork

        branch = walk_to_root({m.id: m for m in rows}, conversation.head_id)
        target = branch[step[1] % len(branch)]
        fork, _ = conversation_fork(conversation_id=conversation.id, message_id=str(target.id),
                                    idempotency_key=str(uuid.uuid4()))
        sources.append(fork)
    elif kind == "delete" and rows:
        parents = {m.parent_id for m in rows}
        leaves = [m for m in rows if m.id not in parents and m.id != conversation.head_id]
        if leaves:
            Message.objects.filter(pk=leaves[step[1] % len(leaves)].pk).delete()


def judgements(captures: list) -> tuple[dict, dict]:
    """Per capture, the captured ids judged live: by the bounded walks (all sources in one call) and by a
    walk of each source's whole stored tree."""
    walks = {}
    for source, captured in captures:
        walk = walk_of(source, captured)
        if walk is not None:
            earlier = walks.get(source.id)
            floor = walk.depth_floor if earlier is None else min(earlier.depth_floor, walk.depth_floor)
            walks[source.id] = SourceWalk(walk.head_id, floor)
    bounded = live_ids_by_source(walks)
    whole = live_ids_whole(list(walks), {source_id: walk.head_id for source_id, walk in walks.items()})
    judged = {}
    for index, (source, captured) in enumerate(captures):
        ids = {uuid.UUID(c) for c in captured}
        judged[index] = (ids & bounded.get(source.id, set()), ids & whole.get(source.id, set()))
    return {k: v[0] for k, v in judged.items()}, {k: v[1] for k, v in judged.items()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=30))
def test_the_bounded_walk_judges_every_captured_message_as_a_walk_of_the_whole_tree(steps):
    first = thread(*[("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(12)])
    second = thread(("user", "another source"), ("assistant", "its reply"))
    sources, captures = [first, second], [(first, final_eight(first)), (second, final_eight(second))]
    for step in steps:
        apply_step(sources, captures, step)
    bounded, whole = judgements(captures)
    assert bounded == whole


def test_the_rendered_slot_carries_only_the_captured_messages_still_live():
    """Through `handoff_blocks_for`: a rewind in the source takes the rewound-away captured messages out."""
    source = thread(*[("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(12)])
    destination = thread()
    ThreadHandoff.objects.filter(destination=destination).delete()
    ThreadHandoff.objects.create(destination=destination, source=source, handoff="as captured",
                                 source_message_ids=final_eight(source))
    rows = rows_of(source)
    source.head = rows[8]  # turns 9, 10 and 11 are rewound away
    source.save(update_fields=["head"])
    block = handoff_blocks_for([destination.id], settings_row=assistant_settings_read())[destination.id]
    assert all(f"turn {i}" in block for i in range(4, 9))
    assert not any(f"turn {i}" in block for i in (3, 9, 10, 11))


# --- Broken sources -------------------------------------------------------------------------------


@pytest.fixture
def make_broken_thread(db):
    """`tests.support.broken_trees.broken_thread`, each one mended before the rollback checks foreign keys."""
    made = []

    def make(kind: str, **kwargs):
        made.append(broken_thread(kind, **kwargs))
        return made[-1]

    yield make
    for broken in made:
        parent_restored(broken)


def test_a_broken_step_inside_the_captured_stretch_makes_only_that_source_carry_nothing(make_broken_thread):
    """The break lies between the head and the oldest captured message: the walk meets it, as the walk of the
    whole tree does; the other source in the same statement still carries its exchange."""
    for kind in BREAKS:
        broken = make_broken_thread(kind, length=12, at=8)
        sound = thread(("user", "a sound question"), ("assistant", "a sound answer"))
        captured = [str(m.id) for m in broken.messages[4:]]
        captures = [(broken.conversation, captured), (sound, final_eight(sound))]
        bounded, whole = judgements(captures)
        assert bounded == whole
        assert bounded[0] == set() and len(bounded[1]) == 2


def test_a_broken_step_above_the_captured_stretch_is_not_read(make_broken_thread):
    """The break lies above the oldest captured message: the handoff never carries it and the walk never reads
    it (as a send's stretch read does not); the captured stretch, whose every step is sound, is carried."""
    for kind in BREAKS:
        broken = make_broken_thread(kind, length=12, at=2)
        captured = [str(m.id) for m in broken.messages[4:]]
        walk = walk_of(broken.conversation, captured)
        live = live_ids_by_source({broken.conversation.id: walk})[broken.conversation.id]
        assert {str(i) for i in live} >= set(captured)


def test_a_source_whose_branch_columns_do_not_follow_is_judged_by_its_whole_tree():
    """Stored depths that do not follow their parent's cannot bound a walk: that source falls back to the walk
    of its whole tree (the same judgement), and says nothing wrong."""
    source = thread(*[("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(12)])
    rows = rows_of(source)
    Message.objects.filter(pk=rows[6].pk).update(branch_depth=2)  # a bad restore's column
    captured = [str(m.id) for m in rows[4:]]
    bounded, whole = judgements([(source, captured)])
    assert bounded == whole and bounded[0] == {m.id for m in rows[4:]}


# --- What the walk reads ------------------------------------------------------------------------------


@pytest.fixture
def rows_fetched(monkeypatch) -> list:
    """Every row any statement returns from now on (through Django's cursor), one entry per row."""
    fetched: list = []

    def counted(name):
        def fetch(self, *args):
            result = getattr(self.cursor, name)(*args)
            if name == "fetchone":
                fetched.extend([result] if result is not None else [])
            else:
                fetched.extend(result)
            return result
        return fetch

    for name in ("fetchone", "fetchmany", "fetchall"):
        monkeypatch.setattr(CursorWrapper, name, counted(name), raising=False)
    return fetched


def test_the_rows_and_statements_read_do_not_grow_with_the_sources_length(rows_fetched):
    """A handoff captured from a 100-message and from a 4,000-message thread: rebuilding it reads the same
    statements and the same number of rows (the walk from the head to the oldest captured message, and the
    captured rows), not the thread."""
    read = {}
    for length in (100, 4_000):
        source = thread(*[("user" if i % 2 == 0 else "assistant", f"turn {i} of {length}") for i in range(length)])
        destination = thread()
        ThreadHandoff.objects.filter(destination=destination).delete()
        ThreadHandoff.objects.create(destination=destination, source=source, handoff="as captured",
                                     source_message_ids=final_eight(source))
        settings_row = assistant_settings_read()
        rows_fetched.clear()
        with CaptureQueriesContext(connection) as statements:
            block = handoff_blocks_for([destination.id], settings_row=settings_row)[destination.id]
        assert f"turn {length - 1} of {length}" in block
        read[length] = (len(statements.captured_queries), len(rows_fetched))
    assert read[100] == read[4_000], read
