"""Attachment manifests: a send commits the uploads it names to the new user message as an ordered,
immutable manifest, copying each verified blob into the conversation's own store (an upload is committed
once; naming it again is a 409); the manifests read back, one query for any number of messages
(seed 004, DESIGN.md "Attachments")."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from uuid import UUID

from django.conf import settings
from django.utils import timezone

from elion.base.errors import Conflict, InvalidInput, NotFound
from transcript.attachments import store
from transcript.attachments.verification import AttachmentUnavailable
from transcript.models import Attachment, Message, MessageAttachment

# --- Commit to a message ---------------------------------------------------------


def attachment_ids_clean(raw: object) -> tuple[UUID, ...]:
    """Shape check of a send's `attachment_ids`: distinct UUIDs, at most the per-message limit."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidInput("attachment_ids must be a list of attachment ids.", code="invalid_attachment_ids")
    limit = settings.ELION_ATTACHMENTS_PER_MESSAGE
    if len(raw) > limit:
        raise InvalidInput(f"A message can carry at most {limit} attachments.", code="too_many_attachments")
    ids: list[UUID] = []
    for value in raw:
        try:
            ids.append(UUID(str(value)))
        except (ValueError, TypeError) as exc:
            raise InvalidInput(f"{value!r} is not an attachment id.", code="invalid_attachment_ids") from exc
    if len(set(ids)) != len(ids):
        raise InvalidInput("An attachment can appear only once in a message.", code="duplicate_attachment")
    return tuple(ids)


def attachments_commit(
    *, message: Message, attachment_ids: tuple[UUID, ...], imported: frozenset[UUID] = frozenset()
) -> list[Attachment]:
    """Give a new user message its manifest, in the order the client listed.

    Precondition: inside the send's transaction, holding the conversation's
    row lock, with `message` just created. The claim is a conditional UPDATE
    (`attached_at` still NULL, not claimed by the garbage collector), so a
    concurrent send or collector can never commit or remove the same upload.
    Each blob is verified in the upload store and copied into the
    conversation's own store before the manifest is written; `imported` names
    the uploads this send already verified and copied before it took the lock
    (`attachments_preverify`), which are not read again, nor touched: that
    copy was written moments ago, so the collector's grace period has just
    begun, and leaving it alone keeps the identity recorded for it valid.
    """
    if not attachment_ids:
        return []
    rows = {row.id: row for row in Attachment.objects.filter(pk__in=attachment_ids)}
    for attachment_id in attachment_ids:
        row = rows.get(attachment_id)
        if row is None:
            raise NotFound(f"No uploaded attachment has id {attachment_id}.", code="attachment_not_found")
        if row.scope_conversation_id is not None and row.scope_conversation_id != message.conversation_id:
            raise Conflict(
                f"The attachment “{row.name}” was uploaded for another conversation.",
                code="attachment_other_conversation",
            )
        if row.attached_at is not None:
            raise Conflict(
                f"The attachment “{row.name}” is already part of a sent message; upload it again to send it again.",
                code="attachment_already_attached",
            )
        if row.gc_claimed_at is not None:
            raise Conflict(
                f"The upload “{row.name}” expired before it was sent; upload it again.", code="attachment_expired"
            )
    claimed = Attachment.objects.filter(
        pk__in=attachment_ids, attached_at__isnull=True, gc_claimed_at__isnull=True
    ).update(attached_at=timezone.now())
    if claimed != len(attachment_ids):
        raise Conflict("An attachment was taken by another request; send again.", code="attachment_claim_conflict")
    destination = store.conversation_store(message.conversation_id)
    ordered = [rows[attachment_id] for attachment_id in attachment_ids]
    for row in ordered:
        if row.id not in imported:
            _import_blob(row, destination)
    MessageAttachment.objects.bulk_create(
        [
            MessageAttachment(conversation_id=message.conversation_id, message=message, position=index, attachment=row)
            for index, row in enumerate(ordered)
        ]
    )
    return ordered


def _import_blob(row: Attachment, destination: Path) -> None:
    try:
        store.read_verified(destination, row.sha256, row.size)
        store.touch(destination, row.sha256)  # restart the collector's grace period for this store's copy
        return
    except store.BlobProblem:
        pass
    try:
        data = store.read_verified(store.upload_store(), row.sha256, row.size)
    except store.BlobProblem as exc:
        raise AttachmentUnavailable(row, exc.reason) from exc
    store.write_bytes(destination, data, row.sha256)


# --- Reading manifests --------------------------------------------------------


def manifests_for(messages: Iterable[Message]) -> dict[UUID, list[Attachment]]:
    """Each message's ordered manifest (empty lists omitted), in one query."""
    ids = [m.id for m in messages]
    manifests: dict[UUID, list[Attachment]] = {}
    if not ids:
        return manifests
    entries = MessageAttachment.objects.filter(message_id__in=ids).select_related(
        "attachment", "attachment__generated_character"
    ).order_by("message_id", "position")
    for entry in entries:
        manifests.setdefault(entry.message_id, []).append(entry.attachment)
    return manifests


def manifests_in_conversation(conversation_id: UUID) -> dict[UUID, list[Attachment]]:
    """Every manifest of one conversation's messages, as `manifests_for` gives them, in one
    query whose size does not grow with the thread (a fork reads a whole branch's): read by the
    entries' own conversation column and its index, never joining the thread's messages."""
    manifests: dict[UUID, list[Attachment]] = {}
    entries = MessageAttachment.objects.filter(conversation_id=conversation_id).select_related(
        "attachment"
    ).order_by("message_id", "position")
    for entry in entries:
        manifests.setdefault(entry.message_id, []).append(entry.attachment)
    return manifests


def manifest_ids(message: Message) -> list[UUID]:
    return list(
        MessageAttachment.objects.filter(message=message).order_by("position").values_list("attachment_id", flat=True)
    )


def manifested_message_ids(conversation_id: UUID) -> set[UUID]:
    """The conversation's messages that list attachments (by the manifest's conversation, no join)."""
    return set(
        MessageAttachment.objects.filter(conversation_id=conversation_id).order_by().values_list("message_id", flat=True)
    )


def attachment_repr(attachment: Attachment) -> dict:
    return {
        "id": str(attachment.id),
        "sha256": attachment.sha256,
        "name": attachment.name,
        "mime": attachment.mime,
        "size": attachment.size,
        # An image a reply generated (`transcript.attachments.generated`), never an upload.
        "generated": attachment.generated,
    }
