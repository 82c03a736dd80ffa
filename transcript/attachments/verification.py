"""Verifying blobs before projection at the cost of a stat(): hash once, trust the file's identity after.

Seed 004: every blob the projected branch references is verified before it
is projected, and a missing or tampered one blocks the request (409, naming
it). Hashing every blob on every send made a thread with hundreds of images
pay for all their bytes each time, so:

1. A blob whose bytes hash correctly has its file identity
   (`store.file_identity`: device, inode, size, mtime_ns, ctime_ns of the
   file those bytes were read from, unchanged across the read) recorded in
   `AttachmentBlobIdentity`. So does a blob the app has just written from
   verified bytes (an import into a conversation's store).
2. A send stat()s every referenced blob. Identity equal to the record: the
   blob is the verified file, unchanged; no hash. Absent: `missing`.
   Anything else (no record, another identity): the bytes are read and hashed
   again; a mismatch is `tampered`, a match records the new identity.
3. `blobs_rehash_all` re-hashes every referenced blob whatever its identity
   (daily through django-q2, and `manage.py check_transcripts`), reports the
   missing and tampered ones and deletes their records, so every process
   re-hashes (and refuses) them from the next send on.

The threat model this assumes is README "Attachments at scale": the identity
catches replacement, truncation, rewriting and restoring by ordinary tools
(each changes the inode or ctime, which no unprivileged call can set back);
a privileged attacker who forges the identity too is caught by the periodic
re-hash, which bounds that window to a day.

An image's data URL comes from the process-local `encoded_cache`, keyed by
the identity just checked; a miss reads and encodes the bytes (no hash).
Records are read in one query per conversation per verification, written in
one statement only when something was hashed.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

from django.db import IntegrityError, connection
from django.db.models import Exists, OuterRef
from django.utils import timezone

from elion.base.errors import Conflict
from transcript.attachments import store
from transcript.attachments.encoded_cache import encoded_blobs
from transcript.models import Attachment, AttachmentBlobIdentity, AttachmentKind, MessageAttachment


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


def image_data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


@dataclass
class BlobVerdicts:
    """One verification's outcome, by sha256: verified blobs (with an image's data URL) and problems."""

    # sha256 -> data URL for a verified image blob, None for a verified file blob.
    verified: dict[str, str | None] = field(default_factory=dict)
    # sha256 -> "missing" | "tampered"
    problems: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Blob:
    sha256: str
    size: int
    # The first image attachment naming these bytes (its mime), or None when only files do.
    image_mime: str | None


def blobs_verify(conversation_id: UUID, attachments: Iterable[Attachment]) -> BlobVerdicts:
    """Verify the blobs these attachments name in the conversation's store (see the module docstring)."""
    blobs = _distinct_blobs(attachments)
    verdicts = BlobVerdicts()
    if not blobs:
        return verdicts
    directory = store.conversation_store(conversation_id)
    recorded = dict(
        AttachmentBlobIdentity.objects.filter(conversation_id=conversation_id).values_list("sha256", "file_identity")
    )
    newly_verified: dict[str, str] = {}
    for blob in blobs:
        identity = store.blob_identity(directory, blob.sha256)
        if identity is None:
            verdicts.problems[blob.sha256] = "missing"
            continue
        if identity == recorded.get(blob.sha256):
            trusted = _trusted_url(directory, blob, identity)
            if trusted is not _CHANGED:
                verdicts.verified[blob.sha256] = trusted
                continue
        outcome = _hashed(directory, blob)
        if isinstance(outcome, _Problem):
            verdicts.problems[blob.sha256] = outcome.reason
            continue
        verdicts.verified[blob.sha256] = outcome.url
        if outcome.identity is not None:
            newly_verified[blob.sha256] = outcome.identity
    identities_record(conversation_id, newly_verified)
    return verdicts


def blob_import_verified(conversation_id: UUID, attachment: Attachment, data: bytes) -> tuple[str, str | None]:
    """Write already-verified bytes into the conversation's store: (its file identity, its part's data URL).

    The caller records the identity (`identities_record`), with the others of its send.
    """
    identity = store.write_bytes(store.conversation_store(conversation_id), data, attachment.sha256)
    if attachment.kind != AttachmentKind.IMAGE:
        return identity, None
    url = image_data_url(attachment.mime, data)
    encoded_blobs.put((attachment.sha256, identity, attachment.mime), url)
    return identity, url


def identities_record(conversation_id: UUID, identities: dict[str, str]) -> None:
    """Record (insert or replace) the identities of verified blobs, in one statement."""
    if not identities:
        return
    now = timezone.now()
    rows = [
        AttachmentBlobIdentity(conversation_id=conversation_id, sha256=sha, file_identity=identity, verified_at=now)
        for sha, identity in identities.items()
    ]

    def upsert() -> None:
        AttachmentBlobIdentity.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["conversation", "sha256"],
            update_fields=["file_identity", "verified_at"],
        )

    if connection.in_atomic_block:
        upsert()  # under the send's row lock: the conversation cannot vanish meanwhile
        return
    # The conversation is gone (or never was): there is nothing left to trust, and the send 404s.
    with contextlib.suppress(IntegrityError):
        upsert()


def identities_forget(conversation_id: UUID, sha256s: Iterable[str]) -> None:
    """Trust no recorded identity of these blobs: every process re-hashes them at their next use."""
    AttachmentBlobIdentity.objects.filter(conversation_id=conversation_id, sha256__in=list(sha256s)).delete()


# --- One blob ----------------------------------------------------------------------------


class _Changed:
    """The file changed between its stat() and its read: verify it by hash instead."""


_CHANGED = _Changed()


@dataclass(frozen=True)
class _Problem:
    reason: str


@dataclass(frozen=True)
class _Hashed:
    url: str | None
    # The identity to record: None when the file changed while it was read.
    identity: str | None


def _trusted_url(directory: Path, blob: _Blob, identity: str) -> str | None | _Changed:
    """A trusted blob's data URL (cached, or read and encoded without a hash); None for a file blob."""
    if blob.image_mime is None:
        return None
    key = (blob.sha256, identity, blob.image_mime)
    url = encoded_blobs.get(key)
    if url is not None:
        return url
    try:
        read = store.read_identified(directory, blob.sha256)
    except store.BlobProblem:
        return _CHANGED
    if not (read.steady and read.before == identity):
        return _CHANGED
    url = image_data_url(blob.image_mime, read.data)
    encoded_blobs.put(key, url)
    return url


def _hashed(directory: Path, blob: _Blob) -> _Hashed | _Problem:
    """Read and hash the blob: the full check, for a blob with no trusted identity."""
    try:
        read = store.read_identified(directory, blob.sha256)
    except store.BlobProblem as exc:
        return _Problem(exc.reason)
    if not store.sha256_matches(read.data, blob.sha256, blob.size):
        return _Problem("tampered")
    url = image_data_url(blob.image_mime, read.data) if blob.image_mime else None
    if not read.steady:
        return _Hashed(url=url, identity=None)  # these bytes are sound; the file they came from is not known
    if url is not None:
        encoded_blobs.put((blob.sha256, read.before, blob.image_mime), url)
    return _Hashed(url=url, identity=read.before)


def _distinct_blobs(attachments: Iterable[Attachment]) -> list[_Blob]:
    blobs: dict[str, _Blob] = {}
    for attachment in attachments:
        known = blobs.get(attachment.sha256)
        image_mime = attachment.mime if attachment.kind == AttachmentKind.IMAGE else None
        if known is None or (known.image_mime is None and image_mime is not None):
            blobs[attachment.sha256] = _Blob(attachment.sha256, attachment.size, image_mime)
    return list(blobs.values())


# --- The periodic full re-hash -----------------------------------------------------------


@dataclass(frozen=True)
class BlobFinding:
    """A referenced blob the full re-hash found missing or tampered."""

    conversation_id: UUID
    attachment_id: UUID
    name: str
    reason: str  # missing | tampered

    def __str__(self) -> str:
        what = "is missing from storage" if self.reason == "missing" else "no longer matches its sha256"
        return f"{self.conversation_id} attachment_{self.reason}: “{self.name}” (id {self.attachment_id}) {what}"


@dataclass
class BlobAudit:
    blobs_hashed: int = 0
    bytes_hashed: int = 0
    findings: list[BlobFinding] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {"blobs_hashed": self.blobs_hashed, "bytes_hashed": self.bytes_hashed, "problems": len(self.findings)}


def blobs_rehash_all(*, conversation_ids: list[UUID] | None = None) -> BlobAudit:
    """Re-hash every blob a manifest references (of these conversations, or all), whatever its identity.

    A sound blob's identity is recorded afresh; a missing or tampered one is
    reported, once per attachment naming it, and its record deleted, so every
    send refuses it from now on even if its identity was forged. Records of
    blobs no manifest references any more (collected, deleted) are removed.
    Reads one blob at a time (at most `ELION_ATTACHMENT_MAX_BYTES`).
    """
    entries = MessageAttachment.objects.all()
    if conversation_ids is not None:
        entries = entries.filter(conversation_id__in=conversation_ids)
    referenced: dict[UUID, dict[str, list[tuple[UUID, str, int]]]] = {}
    for conversation_id, attachment_id, sha256, size, name in (
        entries.values_list(
            "conversation_id", "attachment_id", "attachment__sha256", "attachment__size", "attachment__name"
        )
        .distinct()
        .order_by("conversation_id", "attachment__sha256")
    ):
        named = referenced.setdefault(conversation_id, {}).setdefault(sha256, [])
        if all(known != attachment_id for known, _, _ in named):
            named.append((attachment_id, name, size))
    audit = BlobAudit()
    for conversation_id, blobs in referenced.items():
        _conversation_rehash(conversation_id, blobs, audit)
    _identities_prune(conversation_ids)
    return audit


def _conversation_rehash(
    conversation_id: UUID, blobs: dict[str, list[tuple[UUID, str, int]]], audit: BlobAudit
) -> None:
    directory = store.conversation_store(conversation_id)
    sound: dict[str, str] = {}
    bad: list[str] = []
    for sha256, named in blobs.items():
        size = named[0][2]
        try:
            read = store.read_identified(directory, sha256)
        except store.BlobProblem:
            reason = "missing"
        else:
            audit.blobs_hashed += 1
            audit.bytes_hashed += len(read.data)
            if store.sha256_matches(read.data, sha256, size):
                if read.steady:
                    sound[sha256] = read.before
                continue
            reason = "tampered"
        bad.append(sha256)
        audit.findings.extend(
            BlobFinding(conversation_id, attachment_id, name, reason) for attachment_id, name, _ in named
        )
    if bad:
        identities_forget(conversation_id, bad)
    identities_record(conversation_id, sound)


def _identities_prune(conversation_ids: list[UUID] | None) -> None:
    """Records no manifest of their conversation references any more (their blob was collected)."""
    stale = AttachmentBlobIdentity.objects.filter(
        ~Exists(
            MessageAttachment.objects.filter(
                conversation_id=OuterRef("conversation_id"), attachment__sha256=OuterRef("sha256")
            )
        )
    )
    if conversation_ids is not None:
        stale = stale.filter(conversation_id__in=conversation_ids)
    stale.delete()
