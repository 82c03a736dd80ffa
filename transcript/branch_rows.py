"""Reading a bounded stretch of a branch by its stored columns: what a send reads of its thread.

A send needs the newest part of its branch: the turns its request can carry
under the input budget, and nothing above them. Every message records its
place on its branch (`transcript.append`: depth, running token
measure), so one recursive query walks parent links from a tip up to the first
message at or below a token floor (or a depth floor) and reads only those
rows. Its cost is bounded by what the model sees, never by how long the
thread has lived; nothing is kept between reads, so several processes can
never serve one another stale rows.

Each step of the walk is the tree's one rule (`transcript.tree.tree_break`: a
parent in the same conversation with a smaller seq); a walk that stops short
of its floors at a step that breaks it raises `BrokenTree`, as every walk does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db import connection

from transcript.models import Message
from transcript.tree import BrokenTree, TreeBreak, tree_break

MESSAGE_TABLE = Message._meta.db_table


def _prep(value: UUID) -> object:
    return Message._meta.pk.get_db_prep_value(value, connection)


# More rows than any branch holds: a walk without a row limit.
NO_ROW_LIMIT = 2**31 - 1


def _walk_sql(select: str, carried: tuple[str, ...] = ()) -> str:
    """Parameters: tip id, conversation id, token floor, depth floor, row limit; `select` reads the walk as
    `w`. `carried`: more columns of each row the walk steps on, carried along as columns of `w` (read where
    the step already reads the row, rather than by a second lookup of each row after the walk)."""
    table = connection.ops.quote_name(MESSAGE_TABLE)
    names = "".join(f", {column}" for column in carried)
    values = "".join(f", m.{column}" for column in carried)
    return (
        f"WITH RECURSIVE w(id, parent_id, seq, conversation_id, branch_tokens, branch_depth, steps{names}) AS ("
        f" SELECT m.id, m.parent_id, m.seq, m.conversation_id, m.branch_tokens, m.branch_depth, 1{values}"
        f" FROM {table} m WHERE m.id = %s AND m.conversation_id = %s"
        f" UNION ALL"
        f" SELECT m.id, m.parent_id, m.seq, m.conversation_id, m.branch_tokens, m.branch_depth, w.steps + 1{values}"
        f" FROM {table} m JOIN w ON m.id = w.parent_id"
        f" WHERE m.conversation_id = w.conversation_id AND m.seq < w.seq"
        f" AND w.branch_tokens > %s AND w.branch_depth > %s AND w.steps < %s"
        f") {select}"
    )


@dataclass(slots=True, eq=False)
class StretchMessage:
    """A message as a send or a handoff reads its branch (`branch_stretch_up`): the columns composing a request
    or a handoff needs, as plain data, not a model instance. A window holds thousands of them, and building a
    model instance (every column converted, a descriptor per field) cost more than the rest of the
    composition; so does a frozen dataclass's (a `object.__setattr__` per field), and nothing changes these
    rows. `metadata` and `created_at` are decoded when asked for: only an app event's and the new turn's
    metadata ever are, and only a handoff's few rows' times."""

    id: UUID
    parent_id: UUID | None
    conversation_id: UUID
    seq: int
    role: str
    kind: str
    status: str
    content: str
    branch_depth: int
    branch_tokens: int
    branch_born: bool
    parts: list
    stored_metadata: object  # the column as the driver gave it: JSON text, or (a driver that decodes) the value
    stored_created_at: object  # the column as the driver gave it (text or a datetime), or None: not read

    @property
    def metadata(self) -> dict:
        return _json_value(self.stored_metadata, empty=dict)

    @property
    def created_at(self) -> datetime | None:
        """The message's time (None unless read `with_times`)."""
        return None if self.stored_created_at is None else _datetime_value(self.stored_created_at)


def _json_value(stored: object, *, empty: Callable[[], object]) -> object:
    """A JSON column as the driver gave it (text on SQLite), decoded; its empty value without decoding."""
    if stored is None or stored in ("[]", "{}", ""):
        return empty()
    return json.loads(stored) if isinstance(stored, str) else stored


def _datetime_value(stored: object) -> datetime:
    """A datetime column as the driver gave it, as the model's value: PostgreSQL's driver gives an aware
    datetime already; SQLite's backend converts its text or naive datetime (UTC) as it does for a model."""
    if isinstance(stored, datetime) and stored.tzinfo is not None:
        return stored
    return connection.ops.convert_datetimefield_value(stored, None, connection)


# The columns of a `StretchMessage` the walk does not read already, carried along by it.
_STRETCH_CARRIED = ("role", "kind", "status", "content", "branch_born", "parts", "metadata")


def branch_stretch_up(
    conversation_id: UUID, tip_id: UUID, *, token_floor: int, depth_floor: int = 0, max_rows: int = NO_ROW_LIMIT,
    with_times: bool = False,
) -> list[StretchMessage]:
    """The branch from `tip_id` up to the first message whose `branch_tokens` is at or below `token_floor`
    or whose depth is `depth_floor` (that message included; the root ends every walk), or `max_rows`
    messages, oldest first, as `StretchMessage`s: what a send composes its request from, and what a handoff
    reads its final exchange from. `with_times`: `created_at` read too (a handoff's few rows quote it; a
    send never does, and SQLite's driver parsing a window's thousands of times cost ~5 % of the send).

    One statement. `BrokenTree` when a step breaks the tree before a floor or the row limit is reached.
    """
    token_floor = max(token_floor, -1)  # a budget larger than any thread: walk to the root
    select = (
        "SELECT w.id, w.parent_id, w.seq, w.role, w.kind, w.status, w.content, w.branch_depth, w.branch_tokens,"
        f" w.branch_born, w.parts, w.metadata, {'w.created_at' if with_times else 'NULL'} FROM w"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            _walk_sql(select, carried=_STRETCH_CARRIED + (("created_at",) if with_times else ())),
            [_prep(tip_id), _prep(conversation_id), token_floor, depth_floor, max_rows],
        )
        fetched = cursor.fetchall()
    rows: list[StretchMessage] = []
    above = None  # the row before (one step nearer the root) and its id as the driver gave it
    for row in sorted(fetched, key=lambda row: row[7]):
        # On a sound chain a row's parent is the row before it: that id is reused, not converted again
        # (`_check_depths` still compares the two).
        parent_id = above[0].id if above is not None and row[1] == above[1] else _as_uuid(row[1])
        message = StretchMessage(
            _as_uuid(row[0]), parent_id, conversation_id, row[2], row[3], row[4], row[5], row[6], row[7], row[8],
            bool(row[9]), _json_value(row[10], empty=list), row[11], row[12],
        )
        rows.append(message)
        above = (message, row[0])
    return _walk_checked(rows, conversation_id, tip_id, token_floor=token_floor, depth_floor=depth_floor,
                         row_limited=len(rows) >= max_rows)


def _as_uuid(value: object) -> UUID | None:
    """A UUID column as the driver gave it: a UUID (PostgreSQL), 32 hex digits (SQLite), or NULL."""
    return value if value is None or isinstance(value, UUID) else UUID(value)


def _walk_checked(
    rows: list, conversation_id: UUID, tip_id: UUID, *, token_floor: int, depth_floor: int, row_limited: bool = False
) -> list:
    """A walk's rows oldest first, once they are known to form the branch: `BrokenTree` for a missing tip, a
    walk that ended above its floors (unless the row limit ended it), or rows that do not form one chain."""
    if not rows:
        raise BrokenTree(TreeBreak("missing_tip", conversation_id, tip_id, tip_id,
                                   f"missing message {tip_id} on the path to the root"))
    rows.sort(key=lambda message: message.branch_depth)
    if not row_limited:
        _check_walk_end(rows[0], token_floor=token_floor, depth_floor=depth_floor)
    _check_depths(rows)
    return rows


def _check_walk_end(oldest: Message | StretchMessage, *, token_floor: int, depth_floor: int) -> None:
    """A walk that ended above its floors ended at a step that breaks the tree: raise naming it."""
    if oldest.parent_id is None or oldest.branch_tokens <= token_floor or oldest.branch_depth <= depth_floor:
        return
    parent = Message.objects.filter(pk=oldest.parent_id).only("id", "parent_id", "seq", "conversation_id").first()
    if parent is not None and parent.conversation_id != oldest.conversation_id:
        parent = None
    broken = tree_break(oldest, parent)
    raise BrokenTree(broken or TreeBreak("orphan_parent", oldest.conversation_id, oldest.id, oldest.parent_id,
                                         f"message {oldest.id}'s stored depth does not match its branch"))


def _check_depths(rows: list[Message] | list[StretchMessage]) -> None:
    """The rows read form one chain, each one deeper than its parent (the branch columns are sound)."""
    for parent, child in zip(rows, rows[1:], strict=False):
        if child.parent_id != parent.id or child.branch_depth != parent.branch_depth + 1:
            raise BrokenTree(TreeBreak("parent_seq", child.conversation_id, child.id, child.parent_id or child.id,
                                       f"message {child.id}'s stored depth does not follow its parent's"))


def ancestor_at_depth(conversation_id: UUID, tip_id: UUID, depth: int) -> UUID | None:
    """The id of the message at `depth` on the branch through `tip_id` (None when the walk cannot reach it).
    One statement, walking ids only (no row is read)."""
    sql = _walk_sql("SELECT w.id FROM w WHERE w.branch_depth = %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [_prep(tip_id), _prep(conversation_id), -1, depth, NO_ROW_LIMIT, depth])
        row = cursor.fetchone()
    if row is None:
        return None
    return row[0] if isinstance(row[0], UUID) else UUID(str(row[0]))


@dataclass(frozen=True)
class BranchStretch:
    """A stretch of one branch, oldest first, as a send reads it (`branch_stretch_up`), with its tip possibly a
    message composed by the send and not yet written (a model instance: both have the columns a send reads).

    `reaches_root`: the stretch starts at the branch's root. `positions` answers where a message lies on the
    branch (its depth) for the stretch's own messages, and for any other message by asking the database
    whether it is an ancestor (`ancestor_at_depth`): a compaction's boundary far above the stretch.
    """

    conversation_id: UUID
    messages: list[StretchMessage | Message]

    @property
    def reaches_root(self) -> bool:
        return not self.messages or self.messages[0].parent_id is None

    def get(self, message_id: UUID, default: int | None = None) -> int | None:
        """The depth of `message_id` on this branch, or `default` when it is not on it."""
        found = self._depths().get(message_id)
        if found is not None:
            return found
        if not self.messages or self.reaches_root:
            return default
        oldest = self.messages[0]
        row = Message.objects.filter(pk=message_id, conversation_id=self.conversation_id).values_list(
            "branch_depth", flat=True).first()
        if row is None or row >= oldest.branch_depth:
            return default
        return row if ancestor_at_depth(self.conversation_id, oldest.id, row) == message_id else default

    def __contains__(self, message_id: object) -> bool:
        return isinstance(message_id, UUID) and self.get(message_id) is not None

    def _depths(self) -> dict[UUID, int]:
        cached = self.__dict__.get("_depth_of")
        if cached is None:
            cached = {message.id: message.branch_depth for message in self.messages}
            object.__setattr__(self, "_depth_of", cached)
        return cached


def stretch_extended(stretch: BranchStretch, more: Iterable[StretchMessage | Message]) -> BranchStretch:
    """`stretch` with `more` (older messages, oldest first) put before it."""
    return BranchStretch(stretch.conversation_id, [*more, *stretch.messages])
