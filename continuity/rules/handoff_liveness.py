"""Which captured handoff messages still lie on their source's live branch: one bounded walk per source.

A handoff row records the ids of the source messages it captured (the final eight eligible ones and no
more). Before its exchange is rebuilt into a prompt, each of them must still be on the source's live
branch: a rewind, an edit or a version switch in the source since the capture takes it out. That walk
needs the branch only from the source's head down to the oldest captured message, whose depth is stored
on its row (`Message.branch_depth`, written by the append that added it). So one recursive statement
walks every source in scope from its head up to its own depth floor (the shallowest captured message of
that source), reading ids only; the rows read are the captured stretch plus whatever the source has grown
since its capture, never the source's whole history (issue 40).

Every step the walk takes is checked by the tree's one rule (`transcript.tree.tree_break`), as
`walk_up` checks it: a step that breaks the tree before the floor is reached makes that source carry
nothing (no captured message can be shown to be live), recorded per source, so no destination's prompt,
and no write that refreshes it, is held hostage by another thread's broken tree (`manage.py
check_transcripts` reports that one). A break above the oldest captured message lies outside what the
handoff carries and is not read, as a send's own stretch read (`transcript.branch_rows`) and the capture
itself (`handoff_store.live_branch_handoff`) do not read it.

Stored branch columns that do not follow their parent's (a step whose depth is not one less) cannot be
trusted to bound the walk: that source is judged by a walk of its whole stored tree instead
(`live_ids_whole`), the judgement before issue 40.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from uuid import UUID

from django.db import connection

from transcript.models import Message, Role
from transcript.tree import TREE_STEP_FIELDS, BrokenTree, TreeBreak, TreeStep, tree_break, walk_up

# Sources per statement: five parameters each keeps every statement below SQLite's oldest
# bound-parameter ceiling (999).
SOURCES_PER_WALK = 150


@dataclass(frozen=True)
class SourceWalk:
    """Where one source's walk starts and where it may stop: its head, and the depth of its shallowest
    captured message (the walk reads the message at that depth, then stops)."""

    head_id: UUID
    depth_floor: int


def _prep(value: UUID) -> object:
    return Message._meta.pk.get_db_prep_value(value, connection)


def _uuid(value: object) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))


def _walk_sql(count: int) -> str:
    table = connection.ops.quote_name(Message._meta.db_table)
    whens = " ".join(["WHEN %s THEN %s"] * count)
    return (
        f"WITH RECURSIVE w(id, parent_id, seq, conversation_id, branch_depth, floor) AS ("
        f" SELECT m.id, m.parent_id, m.seq, m.conversation_id, m.branch_depth, CASE m.id {whens} END"
        f" FROM {table} m WHERE m.id IN ({', '.join(['%s'] * count)})"
        f" AND m.conversation_id = CASE m.id {whens} END AND m.role <> %s"
        f" UNION ALL"
        f" SELECT m.id, m.parent_id, m.seq, m.conversation_id, m.branch_depth, w.floor"
        f" FROM {table} m JOIN w ON m.id = w.parent_id"
        f" WHERE m.conversation_id = w.conversation_id AND m.seq < w.seq AND m.role <> %s"
        f" AND w.branch_depth > w.floor"
        f") SELECT w.id, w.parent_id, w.seq, w.conversation_id, w.branch_depth, w.floor,"
        f" p.id, p.parent_id, p.seq, p.conversation_id, p.role, p.branch_depth"
        f" FROM w LEFT JOIN {table} p ON p.id = w.parent_id"
    )


@dataclass(frozen=True)
class _Walked:
    step: TreeStep
    depth: int
    floor: int
    parent: TreeStep | None  # the stored parent row as the walk judges it (None: none in this tree)
    parent_depth: int | None


def _walked_rows(walks: Mapping[UUID, SourceWalk]) -> dict[UUID, dict[UUID, _Walked]]:
    """Every row the walks read, by source conversation and id (one statement per `SOURCES_PER_WALK`)."""
    found: dict[UUID, dict[UUID, _Walked]] = {source_id: {} for source_id in walks}
    items = list(walks.items())
    for start in range(0, len(items), SOURCES_PER_WALK):
        part = items[start : start + SOURCES_PER_WALK]
        floors = [v for source_id, walk in part for v in (_prep(walk.head_id), walk.depth_floor)]
        heads = [_prep(walk.head_id) for _, walk in part]
        owners = [v for source_id, walk in part for v in (_prep(walk.head_id), _prep(source_id))]
        with connection.cursor() as cursor:
            cursor.execute(_walk_sql(len(part)), [*floors, *heads, *owners, Role.SYSTEM, Role.SYSTEM])
            for row in cursor.fetchall():
                step = TreeStep(_uuid(row[0]), _uuid(row[1]) if row[1] is not None else None, int(row[2]),
                                _uuid(row[3]))
                parent = parent_depth = None
                # A walk reads one conversation's tree, as `walk_up` over `tree_messages` does: a parent
                # stored in another conversation, or a stored prompt, is not among its rows.
                if row[6] is not None and _uuid(row[9]) == step.conversation_id and row[10] != Role.SYSTEM:
                    parent = TreeStep(_uuid(row[6]), _uuid(row[7]) if row[7] is not None else None, int(row[8]),
                                      _uuid(row[9]))
                    parent_depth = int(row[11])
                rows = found.get(step.conversation_id)
                if rows is not None:
                    rows[step.id] = _Walked(step, int(row[4]), int(row[5]), parent, parent_depth)
    return found


class _ColumnsUnsound(Exception):
    """A step's stored depth does not follow its parent's: the columns cannot bound this walk."""


def _live_ids_walked(rows: dict[UUID, _Walked], walk: SourceWalk) -> set[UUID]:
    """The ids on the walk from `walk.head_id` down to its floor (or the root), each step checked by
    `tree_break`. `BrokenTree` for a break on the way; `_ColumnsUnsound` when the stored depths do not follow."""
    current = rows.get(walk.head_id)
    if current is None:
        # The head is not a message of this source's tree (`walk_up`'s missing tip).
        raise BrokenTree(TreeBreak("missing_tip", None, walk.head_id, walk.head_id,
                                   f"missing message {walk.head_id} on the path to the root"))
    live: set[UUID] = set()
    while True:
        live.add(current.step.id)
        if current.step.parent_id is None or current.depth <= walk.depth_floor:
            return live
        broken = tree_break(current.step, current.parent)
        if broken is not None:
            raise BrokenTree(broken)
        following = rows.get(current.step.parent_id)
        if following is None or current.parent_depth != current.depth - 1:
            raise _ColumnsUnsound
        current = following


def live_ids_whole(source_ids: Iterable[UUID], heads: Mapping[UUID, UUID | None]) -> dict[UUID, set[UUID]]:
    """Per source, the ids on its live branch from a walk of its whole stored tree (`walk_up`); empty for a
    broken one. Only for sources whose stored branch columns are unsound."""
    source_ids = list(source_ids)
    steps: dict[UUID, dict[UUID, TreeStep]] = {source_id: {} for source_id in source_ids}
    rows = Message.objects.filter(conversation_id__in=source_ids).exclude(role=Role.SYSTEM)
    for row in rows.values_list(*TREE_STEP_FIELDS):
        step = TreeStep(*row)
        steps[step.conversation_id][step.id] = step
    whole: dict[UUID, set[UUID]] = {}
    for source_id in source_ids:
        try:
            whole[source_id] = {step.id for step in walk_up(steps[source_id], heads[source_id])}
        except BrokenTree:
            whole[source_id] = set()
    return whole


def live_ids_by_source(walks: Mapping[UUID, SourceWalk]) -> dict[UUID, set[UUID]]:
    """Per source conversation, the ids on its live branch from its head down to its depth floor (`SourceWalk`);
    an empty set for a source whose walk meets a step that breaks the tree. One statement per
    `SOURCES_PER_WALK` sources (and, for a source with unsound branch columns, a read of its whole tree)."""
    walked = _walked_rows(walks)
    live: dict[UUID, set[UUID]] = {}
    unsound: list[UUID] = []
    for source_id, walk in walks.items():
        try:
            live[source_id] = _live_ids_walked(walked[source_id], walk)
        except BrokenTree:
            live[source_id] = set()
        except _ColumnsUnsound:
            unsound.append(source_id)
    if unsound:
        live.update(live_ids_whole(unsound, {source_id: walks[source_id].head_id for source_id in unsound}))
    return live
