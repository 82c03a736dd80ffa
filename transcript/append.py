"""Appending to the transcript tree: the one way a message joins a conversation (seed 004).

Every new message takes the conversation's next `seq`, names its parent (a
message of the same conversation with a smaller seq, or none for a root),
carries the provider binding it was produced under (empty for the stored
prompt, which no provider produced), and may become the head. Nothing is
ever rewritten: rewind moves the head, edit-and-resend and retry append a
sibling. A fork appends a copy of a whole branch at once (`message_chain_copy`).

The branch columns: each message's place on its branch, as data, written once by the append that adds it.

A message's parent never changes (the tree is append-only), so what lies above
it on its branch is fixed when it is appended. Three columns record it, each
computed from the parent's alone:

* `branch_depth`: how many messages lie above it (the root's is 0), so the
  message is at index `branch_depth` of every branch through it.
* `branch_tokens`: the stored token measure (`stored_turn_tokens`) of it and
  of every message above it. A send finds where its window begins from these
  with one bounded read (`transcript.branch_rows`), and the trim chain's
  points are fixed by them (`continuity.rules.request_policy.trim_start`).
  A reply is appended empty and streams; its own measure is added when it is
  finalised (`conversations.sending.run`), before anything is appended under it.
* `branch_born`: a finished ordinary reply lies above it (seed 000's birth
  period is over for the branch before it), as the rows stood when it was
  appended.

The measure is an estimate used to place things, never a budget: a send counts
the request's real tokens over the rows it read. `tests/transcript/
test_branch_columns.py` compares the columns with a walk from scratch after
random appends, edits, retries, rewinds, forks and version switches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID, uuid4

from django.db import connection
from django.db.models import Expression, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from transcript.models import Conversation, Message, MessageKind, Role
from transcript.models.messages import branch_columns_under, stored_turn_tokens
from transcript.provider.gateway import ProviderBinding

# The conversation columns an append changes: `transcript_write` saves them itself; a `message_append`
# caller saves them.
APPENDED_FIELDS = ("head", "last_seq", "updated_at")


def reply_measure(content: str) -> Expression:
    """A reply's `branch_tokens` once it holds `content`, as an expression over its row (its parent's measure
    plus its own): written with every flush and the final text, before anything is appended under it."""
    through_parent = Subquery(Message.objects.filter(pk=OuterRef("parent_id")).values("branch_tokens")[:1])
    return Coalesce(through_parent, 0) + stored_turn_tokens(Role.ASSISTANT, content)


@dataclass
class TranscriptAppend:
    """Messages composed to join one conversation in one write (`transcript_write`), in order.

    Composing writes nothing and leaves the conversation as it is: each
    message takes the seq after the conversation's last and those composed
    before it, names its parent (a stored message, or one composed before it),
    carries the provider binding it is produced under (none for the stored
    prompt) and may become the head.
    """

    conversation: Conversation
    messages: list[Message] = field(default_factory=list)
    head: Message | None = None

    def add(
        self, *, parent: Message | None, role: str, binding: ProviderBinding | None, make_head: bool, **fields: object
    ) -> Message:
        last_seq = self.conversation.last_seq + len(self.messages)
        if parent is not None and (parent.conversation_id != self.conversation.pk or parent.seq > last_seq):
            raise ValueError("a parent must be an earlier message of the same conversation")
        placed = branch_columns_under(
            parent, role=role, content=str(fields.get("content", "")), kind=str(fields.get("kind", MessageKind.ORDINARY))
        )
        message = Message(
            conversation=self.conversation, parent=parent, seq=last_seq + 1, role=role, **_stamped(binding),
            **placed, **fields,
        )
        self.messages.append(message)
        if make_head:
            self.head = message
        return message


def transcript_write(appending: TranscriptAppend, *, also: Sequence[str] = ()) -> None:
    """The one write of what `appending` composed: its messages in one insert, then the conversation's
    columns that changed (its last seq; its head and update time when a message became the head) and those
    named in `also`, in one update.

    Precondition: the caller holds the conversation's row lock inside a
    transaction, so no other writer takes the same seqs.
    """
    conversation = appending.conversation
    if appending.messages:
        Message.objects.bulk_create(appending.messages)
    conversation.last_seq += len(appending.messages)
    changed = ["last_seq"]
    if appending.head is not None:
        conversation.head = appending.head
        changed += ["head", "updated_at"]
    conversation.save(update_fields=[*changed, *also])


def _stamped(binding: ProviderBinding | None) -> dict:
    """The provider columns a message produced under `binding` carries (none for the stored prompt)."""
    if binding is None:
        return {}
    return {
        "provider_id": binding.provider_id,
        "provider_type": binding.provider_type,
        "model": binding.model,
        "route_fingerprint": binding.route_fingerprint,
    }


def message_append(
    *,
    conversation: Conversation,
    parent: Message | None,
    role: str,
    binding: ProviderBinding | None,
    make_head: bool,
    **fields: object,
) -> Message:
    """Insert one message after `parent` with the conversation's next seq, now (`TranscriptAppend.add`'s
    rule, written at once).

    Precondition: the caller holds the conversation's row lock inside a
    transaction (so no other writer takes the same seq), and saves the
    conversation's `APPENDED_FIELDS` before that transaction commits. The
    app's own writers compose with `TranscriptAppend` and write with
    `transcript_write`, which saves them itself; this is for scripts and
    fixtures that build a transcript turn by turn.
    `binding` is the provider tuple to stamp (None only for the stored prompt).
    """
    message = TranscriptAppend(conversation).add(
        parent=parent, role=role, binding=binding, make_head=make_head, **fields
    )
    message.save(force_insert=True)
    conversation.last_seq = message.seq
    if make_head:
        conversation.head = message
    return message


def binding_of(message: Message) -> ProviderBinding:
    """The provider tuple recorded on a stored message (a fork copies it unchanged)."""
    return ProviderBinding(message.provider_id, message.provider_type, message.model, message.route_fingerprint)


# A copy's own columns; every other column is its original's, unchanged (so a column
# added to Message later is copied too), except the two a finished copy never has.
SET_BY_COPY = ("id", "conversation", "parent", "seq", "metadata", "created_at", "updated_at")
NOT_COPIED = ("lease_expires_at", "stop_requested_at")


def message_chain_copy(
    *, conversation: Conversation, originals: Sequence[UUID], mark_key: str, batch_size: int = 500
) -> list[UUID]:
    """Append copies of `originals` (a chain of another conversation, root first) as a new chain
    from no parent, and make the last copy the head; returns the copies' ids in the same order.
    The chain begins at its conversation's root, so each copy's branch columns (`transcript.append`)
    are its original's, copied with the rest.

    `message_append`'s rule, for many messages at once: each copy takes the
    next seq and the copy before it as its parent; it keeps its original's
    role, kind, content, parts, status, error, provider binding and any other
    column (history as it was produced; no lease, no stop request), and its
    metadata gains `mark_key`: the original's id.
    The rows are copied inside the database (`INSERT … SELECT`, `batch_size`
    a statement), so the text of a long branch never passes through Python.

    Same precondition as `transcript_write`: the conversation's row lock; like
    it, the copy saves the conversation's `APPENDED_FIELDS` itself. The
    database triggers index the copies like any insert.
    """
    table = connection.ops.quote_name(Message._meta.db_table)
    column = {f.name: connection.ops.quote_name(f.column) for f in Message._meta.concrete_fields}
    copied = [name for name in column if name not in SET_BY_COPY + NOT_COPIED]
    postgres = connection.vendor == "postgresql"
    uuid_cast, int_cast = ("::uuid", "::integer") if postgres else ("", "")
    # The mark is added the way `{**metadata, key: id}` would: replaced if present, else appended.
    marked = f"m.{column['metadata']} || jsonb_build_object(%s, v.mark)" if postgres else (
        f"json_set(m.{column['metadata']}, %s, v.mark)"
    )
    mark_param = mark_key if postgres else f'$."{mark_key}"'
    timestamp = Message._meta.get_field("created_at").get_db_prep_value(timezone.now(), connection)
    pk = Message._meta.pk

    def uuid_value(value: UUID) -> object:
        return pk.get_db_prep_value(value, connection)

    copies: list[UUID] = []
    for start in range(0, len(originals), batch_size):
        rows = []
        for original in originals[start:start + batch_size]:
            conversation.last_seq += 1
            copy = uuid4()
            rows.append((original, copy, copies[-1] if copies else None, conversation.last_seq, str(original)))
            copies.append(copy)
        values = ", ".join([f"(%s{uuid_cast}, %s{uuid_cast}, %s{uuid_cast}, %s{int_cast}, %s)"] * len(rows))
        targets = ["id", "conversation", "parent", "seq", *copied, "metadata", "created_at", "updated_at"]
        sources = ["v.new_id", "%s", "v.parent_id", "v.seq", *(f"m.{column[name]}" for name in copied),
                   marked, "%s", "%s"]
        sql = (
            f"WITH v(original_id, new_id, parent_id, seq, mark) AS (VALUES {values}) "
            f"INSERT INTO {table} ({', '.join(column[name] for name in targets)}) "
            f"SELECT {', '.join(sources)} FROM v JOIN {table} m ON m.{column['id']} = v.original_id"
        )
        params = [
            value
            for original, copy, parent, seq, mark in rows
            for value in (uuid_value(original), uuid_value(copy), uuid_value(parent) if parent else None, seq, mark)
        ]
        params += [uuid_value(conversation.pk), mark_param, timestamp, timestamp]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
    if copies:
        conversation.head_id = copies[-1]
    conversation.save(update_fields=APPENDED_FIELDS)
    return copies
