"""Fork: a full copy of a conversation's live branch up to one message.

Seed 004: "Fork copies verified content into the destination store under the
same attachment and content-addressed storage identities while the source
session is locked; it does not share a mutable pathname or depend on the
source file. Missing or tampered media blocks fork." And the provider tuple
is validated before fork publication.

- Only the live branch is copied (root to the chosen message), so nothing
  from a rewound-away sibling, its text or its tool calls, reaches the fork.
- Copied messages get new ids and seqs in the destination, keep role, kind,
  content, tool parts, status and binding, and record `forked_from` (the
  source message id) in their metadata.
- Each manifest lists the same attachment ids in the same order; every blob is
  verified in the source store and its bytes written into the destination's
  own store (`transcript.attachments.store`), so removing the source's
  blobs, or the whole source conversation, leaves the fork intact.
- The destination is created through `conversation_create` (its own memory
  snapshot, origin `fork`) and, like Branch / Fresh Chat, an
  `Idempotency-Key` makes the action retry-safe.
- A fork of a private chat is a private chat: it holds the same words, so it
  stays outside automatic continuity too; its snapshot holds memories only
  if the source's did ("Use memories").
"""

from __future__ import annotations

from uuid import UUID

from django.db import IntegrityError, transaction

from continuity.models import ThreadHandoff
from conversations.services.threads.thread_writes import conversation_create, copy_title_for
from elion.base.errors import Conflict, InvalidInput, NotFound
from elion.base.idempotency import idempotency_key_clean
from memories.models import SnapshotMembership
from memories.services.write_lock import global_write_lock
from transcript.access import access_conversation
from transcript.append import message_chain_copy
from transcript.attachments import store
from transcript.attachments.manifests import manifests_in_conversation
from transcript.attachments.verification import AttachmentUnavailable
from transcript.branch_window import branch_rows_to, on_live_branch
from transcript.guard import reply_finished_guard
from transcript.leases import streams_interrupt_expired
from transcript.models import (
    Attachment,
    Conversation,
    ConversationOrigin,
    IdempotentAction,
    Message,
    MessageAttachment,
    Role,
)
from transcript.provider.binding import provider_binding_gate
from transcript.search_index import message_search_index_sync, message_search_texts_copy

FORK_ACTION = "fork"
FORKED_FROM_KEY = "forked_from"
# What the provider-binding gate reads of each copied row.
BINDING_COLUMNS = ("provider_id", "provider_type", "model", "route_fingerprint")


def _recorded_fork(source: Conversation, key: str, message_id: UUID) -> Conversation | None:
    action = (
        IdempotentAction.objects.filter(action=FORK_ACTION, source=source, key=key).select_related("result").first()
    )
    if action is None:
        return None
    head = Message.objects.filter(pk=action.result.head_id).first()
    if head is None or head.metadata.get(FORKED_FROM_KEY) != str(message_id):
        raise Conflict(
            "This Idempotency-Key was already used to fork from a different message.", code="idempotency_key_reused"
        )
    return action.result


def _message_id(raw: object) -> UUID:
    try:
        return UUID(str(raw))
    except (ValueError, TypeError) as exc:
        raise InvalidInput("message_id must name a message of this conversation.", code="invalid_message_id") from exc


def conversation_fork(
    *, conversation_id: UUID | str, message_id: object, idempotency_key: object
) -> tuple[Conversation, bool]:
    """Fork the live branch up to `message_id`; returns (destination, created)."""
    key = idempotency_key_clean(idempotency_key)
    target_id = _message_id(message_id)
    with transaction.atomic():
        # Lock order: the memory set (the destination captures a snapshot),
        # then the source row, held while its blobs are verified and copied,
        # which also queues duplicate forks behind the first.
        global_write_lock()
        source = access_conversation(conversation_id, lock=True)
        existing = _recorded_fork(source, key, target_id)
        if existing is not None:
            return existing, False
        try:
            with transaction.atomic():
                destination = _fork_create(source, target_id)
                IdempotentAction.objects.create(action=FORK_ACTION, key=key, source=source, result=destination)
        except IntegrityError:
            existing = _recorded_fork(source, key, target_id)
            if existing is None:
                raise
            return existing, False
    # Copies of originals not yet indexed: searchable at once, and no later send tokenises them under its lock.
    message_search_index_sync()
    return destination, True


def _fork_create(source: Conversation, target_id: UUID) -> Conversation:
    streams_interrupt_expired(source)
    target = Message.objects.filter(conversation=source, pk=target_id).exclude(role=Role.SYSTEM).first()
    if target is None:
        raise NotFound("No message with that id in this conversation.", code="message_not_found")
    if not on_live_branch(source, target):
        raise Conflict(
            "That message is not on the live branch; rewind to it first or fork from a live message.",
            code="fork_target_not_live",
        )
    reply_finished_guard(target)
    # The branch from the root to the target, without its text: the copies are made inside the database.
    copied = branch_rows_to(source, target.id, "role", "kind", *BINDING_COLUMNS)
    # Seed 004: the complete provider tuple is validated before publication.
    provider_binding_gate(copied)  # seed 004: the full tuple, before fork publication
    copied_ids = {message.id for message in copied}
    manifests = {
        message_id: attachments
        for message_id, attachments in manifests_in_conversation(source.id).items()
        if message_id in copied_ids
    }
    blobs = _verified_blobs(source.id, manifests)

    destination = conversation_create(
        persona=source.persona, title=_fork_title(source), folder_id=source.folder_id, origin=ConversationOrigin.FORK,
        title_auto=True,
        private=source.private, use_memories=_snapshot_has_memories(source),
    )
    destination_store = store.conversation_store(destination.id)
    for sha256, data in blobs.items():
        store.write_bytes(destination_store, data, sha256)
    originals = [message.id for message in copied]
    copies = message_chain_copy(conversation=destination, originals=originals, mark_key=FORKED_FROM_KEY)
    entries = [
        MessageAttachment(conversation=destination, message_id=copy, position=position, attachment=attachment)
        for original, copy in zip(originals, copies, strict=True)
        for position, attachment in enumerate(manifests.get(original, []))
    ]
    MessageAttachment.objects.bulk_create(entries, batch_size=500)
    # The copies are searchable as soon as they are visible, without tokenising them again.
    message_search_texts_copy(zip(copies, originals, strict=True))
    _copy_thread_handoff(source, destination)
    return destination


def _verified_blobs(conversation_id: UUID, manifests: dict[UUID, list[Attachment]]) -> dict[str, bytes]:
    source_store = store.conversation_store(conversation_id)
    blobs: dict[str, bytes] = {}
    for attachments in manifests.values():
        for attachment in attachments:
            if attachment.sha256 in blobs:
                continue
            try:
                blobs[attachment.sha256] = store.read_verified(source_store, attachment.sha256, attachment.size)
            except store.BlobProblem as exc:
                raise AttachmentUnavailable(attachment, exc.reason, "fork") from exc
    return blobs


def _snapshot_has_memories(conversation: Conversation) -> bool:
    return SnapshotMembership.objects.filter(conversation=conversation).exists()


def _fork_title(source: Conversation) -> str:
    """The source's title, numbered ("Harbour plans (2)"): "Fork" is a badge beside it (`Conversation.origin_badge`)."""
    return copy_title_for(source.display_title)


def _copy_thread_handoff(source: Conversation, destination: Conversation) -> None:
    """A forked Branch / Fresh Chat keeps its handoff: the copy feeds the fork's static prompt alike."""
    row = ThreadHandoff.objects.filter(destination=source).first()
    if row is None or ThreadHandoff.objects.filter(destination=destination).exists():
        return
    ThreadHandoff.objects.create(
        destination=destination,
        source=row.source,
        source_message_ids=row.source_message_ids,
        handoff=row.handoff,
        policy_marker=row.policy_marker,
        summary=row.summary,
        recent_raw=row.recent_raw,
    )
