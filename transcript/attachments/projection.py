"""Verified reads of committed attachments: every model projection re-verifies every blob the projected
branch references and builds its request parts; a missing or tampered blob blocks the request with a 409
that names the attachment, and nothing is replaced by a placeholder. Verifying is a stat() of a blob whose
recorded file identity is unchanged, a full size and sha256 check otherwise (`verification`). A send
verifies before it takes its conversation's lock (`attachments_preverify`); a download reads an
attachment's verified bytes (seed 004, DESIGN.md "Attachments")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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


class PreverifyStale(Exception):
    """Under the lock, the branch lists an attachment the send did not verify before it (its manifests
    changed in between): the send lets its transaction go and reads again (`conversations.sending.prepare`)."""


def manifest_parts_verified(
    conversation_id: UUID,
    wanted: Callable[[UUID], bool],
    *,
    preverified: PreverifiedAttachments | None,
    action: str = "send",
) -> dict[UUID, tuple[dict, ...]]:
    """`attachment_parts_verified` of the manifests of the conversation's messages that are `wanted` (by id).

    For the send under its lock (`preverified`: what it verified before the lock, `attachments_preverify`):
    the manifests are read as (message, attachment) ids alone, one query, and every part comes from that
    verification; an attachment that failed it is refused (409, naming it) from its verdict, and one it
    never saw raises `PreverifyStale`. No blob is touched, so the lock holds no disk I/O. Without
    `preverified` (a caller holding no lock), the attachments are read whole and verified now.
    """
    listed: dict[UUID, list[UUID]] = {}
    for message_id, attachment_id in (
        MessageAttachment.objects.filter(conversation_id=conversation_id)
        .order_by("message_id", "position")
        .values_list("message_id", "attachment_id")
    ):
        if wanted(message_id):
            listed.setdefault(message_id, []).append(attachment_id)
    if preverified is not None:
        return {
            message_id: tuple(preverified.part(a, action) for a in attachment_ids)
            for message_id, attachment_ids in listed.items()
        }
    pending = {a for attachment_ids in listed.values() for a in attachment_ids}
    rows = Attachment.objects.in_bulk(pending) if pending else {}
    verdicts = blobs_verify(conversation_id, rows.values()) if rows else BlobVerdicts()
    return {
        message_id: tuple(_part_verified(rows[a], verdicts, action) for a in attachment_ids)
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
    """What a send verified before taking its conversation's lock: all the disk work its lock would need."""

    # Request parts by attachment id: every blob of the conversation's manifests that verified, and the new
    # turn's uploads.
    parts: dict[UUID, dict]
    # The new turn's uploads whose blobs are in the conversation's store already (copied there now, or found
    # there verified and touched): the manifest's write reads no blob (`attachments_commit`).
    imported: frozenset[UUID]
    # The attachments whose blob failed, by id: the row (to name it) and why ("missing", "tampered").
    problems: dict[UUID, tuple[Attachment, str]] = field(default_factory=dict)
    # The new turn's uploads' names, in the order sent (a turn with no words takes its title from them).
    names: tuple[str, ...] = ()

    def part(self, attachment_id: UUID, action: str = "send") -> dict:
        """The verified part of `attachment_id`; AttachmentUnavailable (409) if its blob failed, and
        `PreverifyStale` if it was not verified before the lock."""
        if attachment_id in self.parts:
            return self.parts[attachment_id]
        if attachment_id in self.problems:
            row, reason = self.problems[attachment_id]
            raise AttachmentUnavailable(row, reason, action)
        raise PreverifyStale(attachment_id)

    def new_turn_parts(self, attachment_ids: tuple[UUID, ...]) -> tuple[dict, ...]:
        """A new user turn's parts, in the order sent: an upload whose blob failed is refused (409, naming
        it); one that could not be claimed before the lock cannot be now (claims only ever close), has no
        part, and writing the manifest refuses it (`attachments_commit`), rolling the send back."""
        for attachment_id in attachment_ids:
            if attachment_id in self.problems:
                self.part(attachment_id)
        return tuple(self.parts[pk] for pk in attachment_ids if pk in self.parts)


def attachments_preverify(
    *, conversation_id: UUID, attachment_ids: tuple[UUID, ...], whole: bool = False
) -> PreverifiedAttachments:
    """Before the lock: verify the blobs a send will project, so the lock holds no disk work.

    Verifies every blob the conversation's manifests list (the branch is only
    known under the lock): a stat() each while their recorded identities
    hold, a hash otherwise (`blobs_verify`), and copies the new turn's
    uploads, hashed in the upload store, into the conversation's store,
    recording the copies' identities (an upload whose bytes the upload store
    lost may be in the conversation's store already: verified there, and
    touched so the collector's grace period restarts). Nothing here decides
    anything: a blob that fails is recorded with why, and the locked send
    refuses it, naming it, only if its branch (or its new turn) needs it; the
    claim and scope checks of the uploads stay under the lock
    (`attachments_commit`). A conversation whose blob store does not exist
    has committed no attachment (a commit and a fork write the store first),
    so it costs no query unless `whole` (a second read, after the locked send
    found manifests this one did not see: `PreverifyStale`).
    """
    conversation_store = store.conversation_store(conversation_id)
    parts: dict[UUID, dict] = {}
    problems: dict[UUID, tuple[Attachment, str]] = {}
    rows = (
        {
            entry.attachment_id: entry.attachment
            # Only what verifying and building a part read (`_PART_FIELDS`): these rows never leave this function.
            for entry in MessageAttachment.objects.filter(conversation_id=conversation_id)
            .select_related("attachment")
            .only("attachment", *(f"attachment__{name}" for name in _PART_FIELDS))
            .order_by()
        }
        if whole or conversation_store.is_dir()
        else {}
    )
    if rows:
        verdicts = blobs_verify(conversation_id, rows.values())
        for attachment in rows.values():
            if attachment.sha256 in verdicts.verified:
                parts[attachment.id] = attachment_part_encoded(attachment, verdicts.verified[attachment.sha256])
            else:
                problems[attachment.id] = (attachment, verdicts.problems[attachment.sha256])
    imported, names = _uploads_import(conversation_id, attachment_ids, parts, problems) if attachment_ids else (set(), ())
    return PreverifiedAttachments(parts=parts, imported=frozenset(imported), problems=problems, names=names)


def _uploads_import(
    conversation_id: UUID,
    attachment_ids: tuple[UUID, ...],
    parts: dict[UUID, dict],
    problems: dict[UUID, tuple[Attachment, str]],
) -> tuple[set[UUID], tuple[str, ...]]:
    """The new turn's uploads that may still be claimed, verified and copied into the conversation's store
    (their parts and problems into `parts` and `problems`): the ones now there, and their names."""
    uploads = {
        upload.id: upload
        for upload in Attachment.objects.filter(
            Q(scope_conversation_id__isnull=True) | Q(scope_conversation_id=conversation_id),
            pk__in=attachment_ids,
            attached_at__isnull=True,
            gc_claimed_at__isnull=True,
        )
    }
    imported: set[UUID] = set()
    copied: dict[str, str] = {}
    lost: list[Attachment] = []
    for upload in uploads.values():
        try:
            data = store.read_verified(store.upload_store(), upload.sha256, upload.size)
        except store.BlobProblem:
            lost.append(upload)
            continue
        copied[upload.sha256], url = blob_import_verified(conversation_id, upload, data)
        parts[upload.id] = attachment_part_encoded(upload, url)
        imported.add(upload.id)
    identities_record(conversation_id, copied)
    if lost:
        verdicts = blobs_verify(conversation_id, lost)
        for upload in lost:
            if upload.sha256 in verdicts.verified:
                store.touch(store.conversation_store(conversation_id), upload.sha256)
                parts[upload.id] = attachment_part_encoded(upload, verdicts.verified[upload.sha256])
                imported.add(upload.id)
            else:
                problems[upload.id] = (upload, verdicts.problems[upload.sha256])
    return imported, tuple(uploads[pk].name for pk in attachment_ids if pk in uploads)
