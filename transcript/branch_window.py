"""Windows of the live branch: the newest `limit` messages, the `limit` before a message, or `limit` around one.

The live branch is the walk from the conversation's head up to its root
(`tree.live_branch`). A window never loads the whole branch: a recursive
query walks parent links inside the database, a bounded number of steps
from a known message, and only the window's rows are then read. So a page's
statement count is the same at any thread length, and its rows are only the
window's.

- Newest (`limit` only): the head and the messages before it.
- `before`: the messages just before the cursor (the cursor itself is not in
  the window, it is after it).
- `around`: the cursor, up to `(limit - 1) // 2` messages after it and the
  rest before; when one side runs out, the other side gets its share (clamped
  at the root and the head), so a window always holds `min(limit, branch length)`
  messages.

A cursor must lie on the live branch: the walk from the head must reach it.
That walk stops at the cursor's seq (a parent's seq is always smaller than
its child's), so a cursor from a rewound-away branch is refused as cheaply as
one on the branch is found. Walking from the head to an old cursor visits the
messages between them inside the database (primary-key lookups, no rows
returned); no index beyond the primary key is needed.

`live_branch_batches` streams the whole branch root first for exports;
`on_live_branch` and `branch_rows_to` serve a fork. `branch_window_start`
(the first messages) and `branch_token_estimate` (one aggregate over the
whole walk, summed inside the database) serve the windowed chat page.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from elion.base.errors import NotFound
from transcript.models import Conversation, Message, Role
from transcript.tree import tree_step_checked, walk_to_root

MESSAGE_TABLE = Message._meta.db_table


@dataclass(frozen=True)
class BranchWindow:
    messages: list[Message]  # oldest to newest
    has_more_before: bool
    has_more_after: bool


def _prep(value: UUID) -> object:
    return Message._meta.pk.get_db_prep_value(value, connection)


def _uuid(value: object) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))


def _walk_sql(tail: str, carried: str = "0") -> str:
    """A walk up parent links from one message of one conversation, `depth` 0 at the start.

    The recursive step takes only a sound step (`transcript.tree.tree_break`: a
    parent in the same conversation with a smaller seq), so the walk ends even
    over a damaged row, and `floor_seq` stops it early. Parameters: start id,
    conversation id, max depth, floor seq, then `tail`'s. `tail` reads the
    walk as `walk`; `_walk` reads it and checks its last step.

    The bounds ride along as columns of the walk (`start`, then `w.max_depth`,
    `w.floor`) rather than as parameters in the recursive step: on SQLite a
    parameter compared with a column of the stepped-to row (`m.seq >= ?`)
    makes the planner build a Bloom filter over the whole message table for
    every walk, which cost ~12 ms at 30,000 rows in the table even for a walk
    of 10 steps, and grew with every conversation's messages.

    `carried`: an expression over the stepped-to row `m` (no parameters), kept
    as the walk's `carried` column, so a sum over the walk reads each row once.
    """
    table = connection.ops.quote_name(MESSAGE_TABLE)
    return (
        "WITH RECURSIVE start(id, conversation_id, max_depth, floor) AS"
        " (SELECT %s, %s, CAST(%s AS INTEGER), CAST(%s AS INTEGER)),"
        " walk(id, parent_id, seq, conversation_id, depth, max_depth, floor, carried) AS ("
        f" SELECT m.id, m.parent_id, m.seq, m.conversation_id, 0, s.max_depth, s.floor, {carried}"
        f" FROM start s JOIN {table} m ON m.id = s.id AND m.conversation_id = s.conversation_id"
        " UNION ALL"
        f" SELECT m.id, m.parent_id, m.seq, m.conversation_id, w.depth + 1, w.max_depth, w.floor, {carried}"
        f" FROM {table} m JOIN walk w ON m.id = w.parent_id"
        " WHERE w.depth < w.max_depth AND m.conversation_id = w.conversation_id AND m.seq < w.seq"
        " AND m.seq >= w.floor"
        f") {tail}"
    )


# The walk's rows (`w`), each with the row its parent link names (`p`) when it is the walk's last
# (deepest) row: `_LAST_STEP_COLUMNS` are what `tree_step_checked` reads (NULLs where `p` is none), then the
# depth. That last step is the one step of a walk that can break the tree.
_LAST_STEP_COLUMNS = "w.id, w.parent_id, w.seq, w.conversation_id, p.id, p.parent_id, p.seq, p.conversation_id, w.depth"
_LAST_STEP_FROM = (
    f"walk w LEFT JOIN {connection.ops.quote_name(MESSAGE_TABLE)} p"
    f" ON p.id = w.parent_id AND w.depth = (SELECT MAX(depth) FROM walk)"
)


def _walk(
    conversation: Conversation, start_id: UUID, max_depth: int, *, floor: int = 0, wanted: str = "1 = 1",
    wanted_params: tuple = (), order: str = "w.depth",
) -> list[UUID]:
    """The ids of the walk's rows that `wanted` (SQL over `w`) selects, in `order`; one statement.

    The walk's last row comes back too, with its parent: when the walk ended
    short of `max_depth` steps and of `floor` on a step `tree_break` refuses
    (a missing parent, or one outside the conversation or not below it in
    seq), `BrokenTree` is raised, as `transcript.tree.walk_up` raises there.
    """
    sql = _walk_sql(
        f"SELECT {_LAST_STEP_COLUMNS}, CASE WHEN {wanted} THEN 1 ELSE 0 END FROM {_LAST_STEP_FROM}"
        f" WHERE ({wanted}) OR w.depth = (SELECT MAX(depth) FROM walk) ORDER BY {order}"
    )
    params = [_prep(start_id), _prep(conversation.pk), max_depth, floor, *wanted_params, *wanted_params]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    _last_step_check(rows, max_depth)
    return [_uuid(row[0]) for row in rows if row[9]]


def _last_step_check(rows: list[tuple], max_depth: int) -> None:
    """`tree_step_checked` on the walk's deepest row, unless `max_depth` cut the walk there."""
    if not rows:
        return
    deepest = max(rows, key=lambda row: row[8])
    if deepest[8] < max_depth:
        tree_step_checked(deepest[:8])


def _ancestor_ids(conversation: Conversation, start_id: UUID, steps: int) -> list[UUID]:
    """`start_id` and up to `steps` of its ancestors, nearest first (one statement)."""
    return _walk(conversation, start_id, steps)


def _cursor_and_after_ids(conversation: Conversation, cursor: Message, steps: int) -> list[UUID] | None:
    """The cursor and up to `steps` live-branch messages after it, oldest first; None when the
    walk from the head does not reach the cursor (it is on another branch). One statement."""
    head_id = conversation.head_id
    if head_id is None:
        return None
    ids = _walk(
        conversation, head_id, conversation.last_seq, floor=cursor.seq,
        wanted="w.depth >= (SELECT depth FROM walk WHERE id = %s) - %s", wanted_params=(_prep(cursor.pk), steps),
        order="w.depth DESC",
    )
    return ids or None


def _rows(conversation: Conversation, ids: list[UUID]) -> list[Message]:
    """The messages with these ids (a walk's, all of this conversation), in branch order (seq rises along a
    branch)."""
    if not ids:
        return []
    return _by_primary_key(Message.objects.filter(pk__in=ids).exclude(role=Role.SYSTEM))


def _by_primary_key(rows: QuerySet[Message]) -> list[Message]:
    """`rows` read by primary key and put in seq order here, not by the database.

    Asked for a conversation's rows in seq order, a planner without statistics
    (SQLite's, where `ANALYZE` never ran) reads the whole thread along the
    (conversation, seq) index to skip a sort of the window's few rows. So the
    query names neither the conversation (the walk that found the ids already
    keeps to it) nor an order (the model's default one included).
    """
    return sorted(rows.order_by(), key=lambda message: message.seq)


def _live_cursor(conversation: Conversation, cursor_id: UUID, steps_after: int) -> list[UUID]:
    """The cursor and up to `steps_after` messages after it, or NotFound when it is not on the live branch."""
    cursor = Message.objects.filter(conversation=conversation, pk=cursor_id).exclude(role=Role.SYSTEM).first()
    path = _cursor_and_after_ids(conversation, cursor, steps_after) if cursor is not None else None
    if path is None:
        raise NotFound("No message with that id on this conversation's live branch.", code="message_not_found")
    return path


def branch_window_newest(conversation: Conversation, *, limit: int) -> BranchWindow:
    """The newest `limit` live-branch messages. Precondition: `limit` ≥ 1."""
    if conversation.head_id is None:
        return BranchWindow([], has_more_before=False, has_more_after=False)
    nearest_first = _ancestor_ids(conversation, conversation.head_id, limit)
    window = list(reversed(nearest_first[:limit]))
    return BranchWindow(_rows(conversation, window), has_more_before=len(nearest_first) > limit, has_more_after=False)


def branch_window_before(conversation: Conversation, *, cursor_id: UUID, limit: int) -> BranchWindow:
    """The `limit` live-branch messages just before the cursor. NotFound when it is not on the live branch."""
    _live_cursor(conversation, cursor_id, 0)
    earlier = _ancestor_ids(conversation, cursor_id, limit + 1)[1:]  # nearest first, the cursor left out
    window = list(reversed(earlier[:limit]))
    return BranchWindow(_rows(conversation, window), has_more_before=len(earlier) > limit, has_more_after=True)


def around_split(limit: int, before_available: int, after_available: int) -> tuple[int, int]:
    """How many messages before and after the cursor an `around` window of `limit` takes.

    The cursor takes one place; the later side wants `(limit - 1) // 2`, the
    earlier side the rest, and a side that runs out gives its share to the other.
    """
    room = limit - 1
    after = min(after_available, max(room // 2, room - before_available))
    before = min(before_available, room - after)
    return before, after


def branch_window_around(conversation: Conversation, *, cursor_id: UUID, limit: int) -> BranchWindow:
    """A window of `limit` live-branch messages centred on the cursor (see `around_split`).

    NotFound when the cursor is not on the live branch.
    """
    # Up to `limit` on each side: enough to fill the window from one side alone
    # and still see whether more lie beyond it.
    cursor_and_after = _live_cursor(conversation, cursor_id, limit)
    after_ids = cursor_and_after[1:]
    before_ids = _ancestor_ids(conversation, cursor_id, limit)[1:]  # nearest first
    before, after = around_split(limit, len(before_ids), len(after_ids))
    window = list(reversed(before_ids[:before])) + [cursor_id] + after_ids[:after]
    return BranchWindow(
        _rows(conversation, window),
        has_more_before=len(before_ids) > before,
        has_more_after=len(after_ids) > after,
    )


def _root_id(conversation: Conversation) -> UUID | None:
    """The live branch's root (the walk's last step); one statement, only that row returned."""
    if conversation.head_id is None:
        return None
    ids = _walk(conversation, conversation.head_id, conversation.last_seq, wanted="w.depth = (SELECT MAX(depth) FROM walk)")
    return ids[0] if ids else None


def branch_window_start(conversation: Conversation, *, limit: int) -> BranchWindow:
    """The first `limit` live-branch messages (the root and those after it). Precondition: `limit` ≥ 1."""
    root_id = _root_id(conversation)
    if root_id is None:
        return BranchWindow([], has_more_before=False, has_more_after=False)
    return branch_window_around(conversation, cursor_id=root_id, limit=limit)


def branch_token_estimate(conversation: Conversation, roles: tuple[str, ...]) -> int:
    """ceil(len(content) / 4) summed over the live branch's messages of these roles
    (`estimate_tokens` per message), computed inside the database: one statement, one row back."""
    if conversation.head_id is None or not roles:
        return 0
    # Each row's share is carried along the walk (one read of each row); the roles are the app's own
    # constants, written into the statement as literals.
    listed = ", ".join(_literal(role) for role in roles)
    sql = _walk_sql(
        f"SELECT {_LAST_STEP_COLUMNS}, (SELECT COALESCE(SUM(carried), 0) FROM walk) FROM {_LAST_STEP_FROM}"
        " WHERE w.depth = (SELECT MAX(depth) FROM walk)",
        carried=f"CASE WHEN m.role IN ({listed}) THEN (LENGTH(m.content) + 3) / 4 ELSE 0 END",
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [_prep(conversation.head_id), _prep(conversation.pk), conversation.last_seq, 0])
        rows = cursor.fetchall()
    _last_step_check(rows, conversation.last_seq)
    total = rows[0][9] if rows else 0
    return int(total)


def _literal(role: str) -> str:
    if role not in Role.values:
        raise ValueError(f"not a message role: {role!r}")
    return f"'{role}'"


def on_live_branch(conversation: Conversation, message: Message) -> bool:
    """Does the walk from the head reach `message` (a message of this conversation)? One statement."""
    return _cursor_and_after_ids(conversation, message, 0) is not None


def branch_rows_to(conversation: Conversation, tip_id: UUID, *fields: str) -> list[Message]:
    """The branch from its root down to `tip_id`, root first, loading only `fields` (and the id):
    one query, however long the branch. The walk's last row's parent comes too (when there is one), so
    `walk_to_root` over the rows checks every step and raises `BrokenTree` where `walk_up` does."""
    walk = RawSQL(
        _walk_sql("SELECT id FROM walk UNION SELECT parent_id FROM walk WHERE depth = (SELECT MAX(depth) FROM walk)"),
        [_prep(tip_id), _prep(conversation.pk), conversation.last_seq, 0],
    )
    rows = Message.objects.filter(conversation=conversation, pk__in=walk).exclude(role=Role.SYSTEM)
    loaded = {message.id: message for message in rows.only("id", "seq", "parent", "conversation", *fields)}
    return walk_to_root(loaded, tip_id) if loaded else []


def live_branch_batches(
    conversation: Conversation, *, roles: tuple[str, ...] | None = None, batch_size: int = 200
) -> Iterator[list[Message]]:
    """The live branch root first, in lists of at most `batch_size`, never holding more in memory.

    One walk from the head notes every `batch_size`-th message (the tips of
    the segments), when called: a broken tree raises `BrokenTree` here, before
    a caller streaming the batches has sent a byte. Then each segment, the
    root's first, is read by a walk of `batch_size` steps from its tip, as the
    batches are asked for: a query per batch, each bounded, and no cursor held
    open across them. Parent links never change, so the batches join into the
    branch as it was when the export began. `roles`: only these roles (the
    stored prompt, outside the tree, is never on the branch).
    """
    if conversation.head_id is None:
        return iter(())
    tips = _walk(
        conversation, conversation.head_id, conversation.last_seq, wanted="w.depth %% %s = 0",
        wanted_params=(batch_size,), order="w.depth DESC",
    )
    return _segments(conversation, tips, roles, batch_size)


def _segments(
    conversation: Conversation, tips: list[UUID], roles: tuple[str, ...] | None, batch_size: int
) -> Iterator[list[Message]]:
    for tip in tips:
        segment = RawSQL(_walk_sql("SELECT id FROM walk"), [_prep(tip), _prep(conversation.pk), batch_size - 1, 0])
        rows = Message.objects.filter(pk__in=segment).exclude(role=Role.SYSTEM)
        if roles is not None:
            rows = rows.filter(role__in=roles)
        batch = _by_primary_key(rows)
        if batch:
            yield batch
