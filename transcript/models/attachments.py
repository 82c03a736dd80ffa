"""Attachments: the uploaded (or generated) files, each message's immutable manifest of them, and
the verified identity of each conversation-store blob.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db import models

from transcript.models.messages import Message
from transcript.models.threads import Conversation


class AttachmentKind(models.TextChoices):
    IMAGE = "image", "Image"
    FILE = "file", "File"
    # A kept voice recording (dictation with "Keep voice recordings" on): its words are the message's text.
    AUDIO = "audio", "Audio"


class Attachment(models.Model):
    """One uploaded (or generated) image or file: its attachment identity and its content identity.

    The bytes live as content-addressed blobs (`transcript.attachments.store`):
    first in the upload store, then, once a send commits it, in the store of
    every conversation whose messages list it. Rows never change after upload
    except the two claim timestamps, each set once by a conditional UPDATE
    (and `generated_character`, cleared when its character is deleted).

    A generated image (`generated`) is written by a reply, straight into its
    conversation's store, and listed on the assistant message's manifest
    (`transcript.attachments.generated`); it is born attached.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    sha256 = models.CharField(max_length=64, db_index=True)
    size = models.PositiveBigIntegerField()
    # Display name only: sanitised at upload and never used in a filesystem path.
    name = models.CharField(max_length=255)
    mime = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=AttachmentKind.choices)
    # The text a file contributes to model requests (extracted once at upload);
    # empty for images, which travel as image inputs.
    text = models.TextField(blank=True, default="")
    # Set at upload when the client names a conversation: only that one may attach it.
    scope_conversation_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set once, by the send that commits the attachment to a message.
    attached_at = models.DateTimeField(null=True, blank=True)
    # Set once, by the garbage collector that claimed an unattached upload.
    gc_claimed_at = models.DateTimeField(null=True, blank=True)
    # An image a reply generated (image generation), never an upload; and the saved
    # character whose image guidance went into its prompt, if any (its gallery).
    generated = models.BooleanField(default=False)
    # Character Studio's character (the conversations app's row), named by label: transcript imports no app above it.
    generated_character = models.ForeignKey(
        "elion.Character", null=True, blank=True, on_delete=models.SET_NULL, related_name="generated_images"
    )

    class Meta:
        db_table = "conversations_attachment"
        indexes = [models.Index(fields=["attached_at", "created_at"], name="attachment_gc_scan")]

    def __str__(self) -> str:
        return f"{self.name} ({self.sha256[:12]})"


def manifest_entries_conversation_settle(entries: list[MessageAttachment]) -> None:
    """Give each manifest entry its message's conversation, or refuse (ValueError) one naming another.

    An entry's `conversation` repeats its message's, so a conversation's
    manifests are read by an index of their own, without the message table.
    A database CHECK cannot compare two tables, so every write through the app
    passes here instead: `MessageAttachment.save`, the manager's
    `bulk_create`, and a restore (`operations.backup.restoring`). The
    conversation is taken from a message instance the entry already holds, and
    otherwise read, for all the entries at once, from the message rows.
    """
    unknown = {
        entry.message_id for entry in entries
        if entry.message_id is not None and "message" not in entry._state.fields_cache
    }
    owners: dict[uuid.UUID, uuid.UUID] = {}
    ids = sorted(unknown)
    for start in range(0, len(ids), _SETTLE_BATCH):
        owners.update(
            Message._base_manager.filter(pk__in=ids[start : start + _SETTLE_BATCH]).values_list("pk", "conversation_id")
        )
    for entry in entries:
        owner = entry.message.conversation_id if entry.message_id not in unknown else owners.get(entry.message_id)
        if owner is None:
            continue  # no such message: the foreign key refuses the row
        if entry.conversation_id is None:
            entry.conversation_id = owner
        elif entry.conversation_id != owner:
            raise ValueError(
                f"A manifest entry of message {entry.message_id} must name that message's conversation "
                f"({owner}), not {entry.conversation_id}."
            )


_SETTLE_BATCH = 500


class ManifestEntryQuerySet(models.QuerySet):
    """Entries are written whole and never changed (`MessageAttachment`)."""

    def bulk_create(self, objs: Iterable[MessageAttachment], *args: object, **kwargs: object) -> list[MessageAttachment]:
        entries = list(objs)
        manifest_entries_conversation_settle(entries)
        return super().bulk_create(entries, *args, **kwargs)

    def update(self, **kwargs: object) -> int:
        raise ValueError("A message's attachment manifest is immutable.")

    def bulk_update(self, *args: object, **kwargs: object) -> int:
        raise ValueError("A message's attachment manifest is immutable.")


class MessageAttachment(models.Model):
    """One entry of a message's immutable, ordered attachment manifest.

    Written in the transaction that creates its message (a send or a fork)
    and never updated; a fork lists the same attachment under its own
    message, so one attachment identity can appear in several conversations.
    A reply's generated images are the one addition: each is appended, at the
    next position, while the reply streams (`transcript.attachments.generated`).

    `conversation` is always the message's own (issue 18): a send reads its
    conversation's manifests by `(conversation, message, position)`, a cost
    that does not grow with the thread's other messages. Every writer goes
    through `manifest_entries_conversation_settle` (there is no cross-table
    CHECK in SQL), which fills it from the message or refuses a mismatch.
    """

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="manifest_entries", db_index=False
    )
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="manifest")
    position = models.PositiveSmallIntegerField()
    attachment = models.ForeignKey(Attachment, on_delete=models.PROTECT, related_name="manifest_entries")

    objects = ManifestEntryQuerySet.as_manager()

    class Meta:
        db_table = "conversations_messageattachment"
        # By the columns themselves: ordering by `message` would join the message and conversation
        # tables (their own orderings) into every read of a conversation's entries.
        ordering = ["message_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["message", "position"], name="manifest_position_unique"),
            models.UniqueConstraint(fields=["message", "attachment"], name="manifest_attachment_unique"),
        ]
        # A conversation's manifests in their order (its leading column serves the foreign key too).
        indexes = [models.Index(fields=["conversation", "message", "position"], name="manifest_conversation_order")]

    def __str__(self) -> str:
        return f"attachment {self.position} of {self.message_id}"

    def save(self, *args: object, **kwargs: object) -> None:
        # The manifest is immutable once written: an existing entry is never saved again.
        if not self._state.adding:
            raise ValueError("A message's attachment manifest is immutable.")
        manifest_entries_conversation_settle([self])
        super().save(*args, **kwargs)


class AttachmentBlobIdentity(models.Model):
    """The file identity of one conversation-store blob when its bytes last hashed correctly.

    Seed 004 wants every referenced blob verified before it is projected. A
    blob is read-only and never rewritten by the app (a store only adds or
    removes whole files), so after one full check its identity, the
    `(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)` of the file whose
    bytes were hashed, stands in for the hash: a send stat()s each blob and
    re-hashes only when the identity differs from this record (or there is
    none). What that catches and what it cannot is README "Attachments at
    scale"; a daily full re-hash (`blobs_rehash_all`) bounds the rest.

    Why a row and not a process-local cache: a send runs in any Daphne worker
    and the re-hash job in a django-q cluster; one record is shared by all of
    them and survives restarts, so a 200-image thread is hashed once, not once
    per process and again after every deploy, and the job can revoke trust
    (delete the row) for every process at once. All of a conversation's rows
    are read in one query per send. One row per (conversation, sha256): each
    conversation owns its copy of the bytes (a fork copies), so each file has
    its own identity. The identity is one text value, `dev:ino:size:mtime_ns:ctime_ns`,
    because device and inode numbers are unsigned 64-bit and do not fit a
    signed bigint column on every filesystem; it is only ever compared whole.
    """

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="blob_identities")
    sha256 = models.CharField(max_length=64)
    file_identity = models.CharField(max_length=120)
    verified_at = models.DateTimeField()

    class Meta:
        db_table = "conversations_attachmentblobidentity"
        constraints = [
            models.UniqueConstraint(fields=["conversation", "sha256"], name="blob_identity_unique"),
        ]

    def __str__(self) -> str:
        return f"blob {self.sha256[:12]} of {self.conversation_id}"
