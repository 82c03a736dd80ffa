"""Attachments: upload, commit to a message's manifest, verify before projection.

Rules (seed 004, DESIGN.md "Attachments"):
- An upload is checked (size, emptiness, type sniffed from the bytes, text a
  model can read) and stored once as a content-addressed blob.
- A send commits the uploads it names to the new user message as an ordered,
  immutable manifest and copies each verified blob into the conversation's own
  store. An upload is committed once; naming it again is a 409.
- Every model projection re-verifies every blob the projected branch
  references. A missing or tampered blob blocks the request with a 409 that
  names the attachment; nothing is replaced by a placeholder. Verifying is a
  stat() of a blob whose recorded file identity is unchanged, a full size and
  sha256 check otherwise (`transcript.attachments.verification`).
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Q
from django.utils import timezone

from conversations.models import Attachment, AttachmentKind, Message, MessageAttachment
from elion.base.errors import Conflict, InvalidInput, NotFound, ServiceError
from elion.base.rows import id_or_not_found
from transcript.access import access_conversation
from transcript.attachments import store
from transcript.attachments.verification import (
    BlobVerdicts,
    blob_import_verified,
    blobs_verify,
    identities_record,
    image_data_url,
)
from transcript.uploads import decode_text, image_mime, pdf_text, size_text

NAME_MAX = 200
# Image formats every supported model accepts, recognised by their magic bytes
# (the client's declared content type is never trusted).
_TEXT_MIMES = {
    ".md": "text/markdown", ".markdown": "text/markdown", ".json": "application/json", ".csv": "text/csv",
    ".tsv": "text/tab-separated-values", ".html": "text/plain", ".htm": "text/plain", ".xml": "text/plain",
    ".svg": "text/plain",
}


class FileTooLarge(ServiceError):
    status = 413
    code = "attachment_too_large"


class UnsupportedType(ServiceError):
    status = 415
    code = "unsupported_attachment_type"


class AttachmentUnavailable(Conflict):
    """A referenced blob is missing or tampered: the projection is refused, naming it."""

    def __init__(self, attachment: Attachment, reason: str, action: str = "send") -> None:
        what = (
            "is missing from storage" if reason == "missing"
            else "no longer matches its recorded content (size or sha256 differs)"
        )
        super().__init__(
            f"The attachment “{attachment.name}” (id {attachment.id}) {what}, so this {action} was blocked and "
            "nothing reached the model. Restore the file from a backup, or continue from a message before it.",
            code=f"attachment_{reason}",
        )
        self.attachment_id = attachment.id


# --- Upload -----------------------------------------------------------------


def attachment_name_clean(raw: object) -> str:
    """A display name: the last path component, no control characters, bounded.

    Directory parts (`../`, `C:\\`) are dropped; the name is never used as a path.
    """
    text = unicodedata.normalize("NFC", str(raw or ""))
    text = text.replace("\\", "/").split("/")[-1]
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C").strip().lstrip(".").strip()
    return text[:NAME_MAX] or "attachment"


def _sniff(name: str, data: bytes) -> tuple[str, str, str]:
    """(kind, mime, text) from the bytes themselves; 415 for anything a model cannot take."""
    mime = image_mime(data)
    if mime is not None:
        return AttachmentKind.IMAGE, mime, ""
    if data.startswith(b"%PDF-"):
        return AttachmentKind.FILE, "application/pdf", pdf_text(data)

    try:
        text = decode_text(data)
    except InvalidInput as exc:
        if exc.code == "not_text":
            raise UnsupportedType(
                "Attach images (PNG, JPEG, GIF, WebP), PDFs, or text files (plain text, Markdown, JSON, CSV…).",
            ) from exc
        raise
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return AttachmentKind.FILE, _TEXT_MIMES.get(suffix, "text/plain"), text


def attachment_upload(*, upload: UploadedFile | None, conversation_id: object = None) -> Attachment:
    """Check and store one uploaded file; answers the new (uncommitted) attachment.

    `conversation_id`, when given, scopes the upload: only that conversation may attach it.
    """
    if upload is None:
        raise InvalidInput("Send the file as multipart field `file`.", code="file_required")
    scope = access_conversation(conversation_id).id if conversation_id not in (None, "") else None
    limit = settings.ELION_ATTACHMENT_MAX_BYTES
    try:
        if upload.size is not None and upload.size > limit:
            raise attachment_too_large()
        upload.seek(0)
        data = upload.read(limit + 1)  # the declared size is not trusted
    finally:
        upload.close()
    if len(data) > limit:
        raise attachment_too_large()
    if not data:
        raise InvalidInput("The file is empty.", code="empty_file")
    name = attachment_name_clean(upload.name)
    kind, mime, text = _sniff(name, data)
    if len(text) > settings.ELION_ATTACHMENT_MAX_TEXT_CHARACTERS:
        raise FileTooLarge(
            f"The file holds {len(text):,} characters of text; an attachment can hold at most "
            f"{settings.ELION_ATTACHMENT_MAX_TEXT_CHARACTERS:,}.",
            code="attachment_text_too_long",
        )
    sha = hashlib.sha256(data).hexdigest()
    store.write_bytes(store.upload_store(), data, sha)
    return Attachment.objects.create(
        sha256=sha, size=len(data), name=name, mime=mime, kind=kind, text=text, scope_conversation_id=scope
    )


def attachment_too_large() -> FileTooLarge:
    limit = settings.ELION_ATTACHMENT_MAX_BYTES
    return FileTooLarge(f"The file is larger than the attachment limit of {size_text(limit)}.")


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


# --- Projection ------------------------------------------------------------------


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


def manifested_message_ids(conversation_id: UUID) -> set[UUID]:
    """The conversation's messages that list attachments (by the manifest's conversation, no join)."""
    return set(
        MessageAttachment.objects.filter(conversation_id=conversation_id).order_by().values_list("message_id", flat=True)
    )


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
