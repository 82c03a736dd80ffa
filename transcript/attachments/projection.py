"""Verified reads of committed attachments: every model projection re-verifies every blob the projected
branch references and builds its request parts; a missing or tampered blob blocks the request with a 409
that names the attachment, and nothing is replaced by a placeholder. Verifying is a stat() of a blob whose
recorded file identity is unchanged, a full size and sha256 check otherwise (`verification`). A send
verifies before it takes its conversation's lock (`attachments_preverify`); a download reads an
attachment's verified bytes (seed 004, DESIGN.md "Attachments")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from uuid import UUID

from django.db.models import Q

from elion.base.errors import NotFound
from elion.base.rows import id_or_not_found
from transcript.attachments import store
from transcript.attachments.verification import (
    AttachmentUnavailable,
    BlobVerdicts,
    blob_import_verified,
    blobs_verify,
    identities_record,
    image_data_url,
)
from transcript.models import Attachment, AttachmentKind, MessageAttachment


def attachment_parts_verified(
    conversation_id: UUID,
    manifests: dict[UUID, list[Attachment]],
    *,
    action: str = "send",
    verified: Mapping[UUID, dict] | None = None,
) -> dict[UUID, tuple[dict, ...]]:
    """Verify every referenced blob in the conversation's store and build its request parts.

    Images become `{"type": "image", "image_url": <data URL>}`; files become a
    labelled text part with the text extracted at upload. Raises
    AttachmentUnavailable (409, naming the attachment) for a missing or
    tampered blob. `verified`: parts this same send verified already, by
    attachment id (`attachments_preverify`); attachment rows never change, so
    those are used as they are.
    """
    verified = verified or {}
    pending = [a for attachments in manifests.values() for a in attachments if a.id not in verified]
    verdicts = blobs_verify(conversation_id, pending) if pending else BlobVerdicts()
    return {
        message_id: tuple(
            verified[a.id] if a.id in verified else _part_verified(a, verdicts, action) for a in attachments
        )
        for message_id, attachments in manifests.items()
    }


def manifest_parts_verified(
    conversation_id: UUID, wanted: Callable[[UUID], bool], *, verified: Mapping[UUID, dict], action: str = "send"
) -> dict[UUID, tuple[dict, ...]]:
    """`attachment_parts_verified` of the manifests of the conversation's messages that are `wanted` (by id).

    For the send under its lock: `verified` holds the parts its pre-lock
    verification built (`attachments_preverify`), normally every attachment
    the manifests list, so the manifests are read as (message, attachment)
    ids alone, and only an attachment missing from `verified` is read whole,
    verified now and refused (409, naming it) if its blob fails.
    """
    listed: dict[UUID, list[UUID]] = {}
    for message_id, attachment_id in (
        MessageAttachment.objects.filter(conversation_id=conversation_id)
        .order_by("message_id", "position")
        .values_list("message_id", "attachment_id")
    ):
        if wanted(message_id):
            listed.setdefault(message_id, []).append(attachment_id)
    pending = {a for attachment_ids in listed.values() for a in attachment_ids if a not in verified}
    rows = Attachment.objects.in_bulk(pending) if pending else {}
    verdicts = blobs_verify(conversation_id, rows.values()) if rows else BlobVerdicts()
    return {
        message_id: tuple(
            verified[a] if a in verified else _part_verified(rows[a], verdicts, action) for a in attachment_ids
        )
        for message_id, attachment_ids in listed.items()
    }


def _part_verified(attachment: Attachment, verdicts: BlobVerdicts, action: str) -> dict:
    problem = verdicts.problems.get(attachment.sha256)
    if problem is not None:
        raise AttachmentUnavailable(attachment, problem, action)
    return attachment_part_encoded(attachment, verdicts.verified[attachment.sha256])


def attachment_part(attachment: Attachment, data: bytes) -> dict:
    """The request part of an attachment whose bytes were just verified (encoded here)."""
    encoded = image_data_url(attachment.mime, data) if attachment.kind == AttachmentKind.IMAGE else None
    return attachment_part_encoded(attachment, encoded)


def attachment_part_encoded(attachment: Attachment, data_url: str | None) -> dict:
    """The request part of a verified attachment: an image's data URL, or a file's labelled text."""
    if attachment.kind == AttachmentKind.IMAGE:
        return {"type": "image", "image_url": data_url}
    if attachment.kind == AttachmentKind.AUDIO:
        # A kept voice recording (issue 43): the message's text is its transcription, so the model is told
        # the turn was spoken, never sent the sound.
        return {"type": "text", "text": f"[Voice recording “{attachment.name}”: the message text is its transcription]"}
    return {
        "type": "text",
        "text": f"[Attached file “{attachment.name}” ({attachment.mime})]\n{attachment.text}",
    }


def attachment_verified_content(*, conversation_id: UUID, attachment_id: object) -> tuple[Attachment, bytes]:
    """An attachment listed on one of the conversation's messages, with its verified bytes."""
    attachment_id = id_or_not_found(
        attachment_id, kind="uuid", missing="No attachment has that id.", code="attachment_not_found"
    )
    entry = (
        MessageAttachment.objects.filter(conversation_id=conversation_id, attachment_id=attachment_id)
        .select_related("attachment")
        .first()
    )
    if entry is None:
        raise NotFound("No attachment with that id in this conversation.", code="attachment_not_found")
    try:
        data = store.read_verified(store.conversation_store(conversation_id), entry.attachment.sha256, entry.attachment.size)
    except store.BlobProblem as exc:
        raise AttachmentUnavailable(entry.attachment, exc.reason, "download") from exc
    return entry.attachment, data


# The attachment columns `blobs_verify` and `attachment_part_encoded` read.
_PART_FIELDS = ("sha256", "size", "name", "mime", "kind", "text")


@dataclass(frozen=True)
class PreverifiedAttachments:
    """What a send verified before taking its conversation's lock."""

    # Request parts by attachment id: every blob of the conversation's manifests that verified.
    parts: dict[UUID, dict]
    # The new turn's uploads, already verified and copied into the conversation's store.
    imported: frozenset[UUID]


def attachments_preverify(*, conversation_id: UUID, attachment_ids: tuple[UUID, ...]) -> PreverifiedAttachments:
    """Before the lock: verify the blobs a send will project, so the lock holds no disk work.

    Verifies every blob the conversation's manifests list (the branch is only
    known under the lock): a stat() each while their recorded identities
    hold, a hash otherwise (`blobs_verify`), and copies the new turn's
    uploads, hashed in the upload store, into the conversation's store,
    recording the copies' identities. Nothing here decides anything: a blob
    that fails is left out, and the locked send checks it again (and
    refuses, naming it) if its branch needs it; the claim and scope checks of
    the uploads stay under the lock too (`attachments_commit`). A
    conversation whose blob store does not exist has committed no attachment
    (a commit and a fork write the store first), so it costs no query; if its
    manifests say otherwise, the locked send finds them and refuses, as for
    any missing blob.
    """
    conversation_store = store.conversation_store(conversation_id)
    parts: dict[UUID, dict] = {}
    rows = (
        {
            entry.attachment_id: entry.attachment
            # Only what verifying and building a part read (`_PART_FIELDS`): these rows never leave this function.
            for entry in MessageAttachment.objects.filter(conversation_id=conversation_id)
            .select_related("attachment")
            .only("attachment", *(f"attachment__{name}" for name in _PART_FIELDS))
            .order_by()
        }
        if conversation_store.is_dir()
        else {}
    )
    if rows:
        verdicts = blobs_verify(conversation_id, rows.values())
        for attachment in rows.values():
            if attachment.sha256 in verdicts.verified:
                parts[attachment.id] = attachment_part_encoded(attachment, verdicts.verified[attachment.sha256])
    imported: set[UUID] = set()
    if attachment_ids:
        uploads = Attachment.objects.filter(
            Q(scope_conversation_id__isnull=True) | Q(scope_conversation_id=conversation_id),
            pk__in=attachment_ids,
            attached_at__isnull=True,
            gc_claimed_at__isnull=True,
        )
        copied: dict[str, str] = {}
        for upload in uploads:
            try:
                data = store.read_verified(store.upload_store(), upload.sha256, upload.size)
            except store.BlobProblem:
                continue  # the locked commit names it
            copied[upload.sha256], url = blob_import_verified(conversation_id, upload, data)
            parts[upload.id] = attachment_part_encoded(upload, url)
            imported.add(upload.id)
        identities_record(conversation_id, copied)
    return PreverifiedAttachments(parts=parts, imported=frozenset(imported))
