"""Images a reply generated: checked, stored as content-addressed blobs, listed on the reply's manifest.

A generated image is an attachment like an upload (seed 004): its bytes are
one blob named by their sha256 in the conversation's own store (temp file,
fsync, rename, read-only), its row is immutable, and every later send,
retry, fork or download verifies it like any other blob (a missing or
tampered one blocks the request with 409 `attachment_missing` /
`attachment_tampered`). What differs:

- it is born attached: written straight into the conversation's store and
  appended to the assistant message's manifest at the next position while
  the reply streams (the one addition a manifest ever gets);
- its row says so (`Attachment.generated`), with the saved character whose
  image guidance went into its prompt (`generated_character`, the gallery);
- the reply's `metadata["generated_images"]` records every image it asked
  for, in order: where it came from, the character used, the prompt, and
  the attachment, or the error when it failed.

The provider's base64 is checked before anything is written: strict base64,
at most `ELION_ATTACHMENT_MAX_BYTES` once decoded, an image by its magic
bytes (PNG, JPEG, GIF, WebP), and at most `ELION_ATTACHMENTS_PER_MESSAGE`
images per reply. A refusal is `GeneratedImageRejected`, which the caller
turns into a tool error the model and the owner read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from elion.base.uploads import image_mime, size_text
from transcript.attachments import store
from transcript.attachments.verification import identities_record
from transcript.models import Attachment, AttachmentKind, Message, MessageAttachment

GENERATED_IMAGES_KEY = "generated_images"
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


class GeneratedImageRejected(Exception):
    """The provider's image cannot be stored; `reason` says why, for the tool error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def generated_image_bytes(b64: object) -> tuple[bytes, str]:
    """The provider's base64 image as checked bytes and their mime type; GeneratedImageRejected otherwise."""
    if not isinstance(b64, str) or not b64.strip():
        raise GeneratedImageRejected("the provider sent no image data")
    limit = settings.ELION_ATTACHMENT_MAX_BYTES
    if len(b64.strip()) > (limit + 2) // 3 * 4:  # decoded, it could only be larger than the limit
        raise GeneratedImageRejected(f"the image is larger than the attachment limit of {size_text(limit)}")
    try:
        data = base64.b64decode(b64.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise GeneratedImageRejected("the provider's image data is not valid base64") from exc
    if not data:
        raise GeneratedImageRejected("the provider sent no image data")
    if len(data) > limit:
        raise GeneratedImageRejected(f"the image is larger than the attachment limit of {size_text(limit)}")
    mime = image_mime(data)
    if mime is None:
        raise GeneratedImageRejected("the provider's data is not an image (PNG, JPEG, GIF or WebP)")
    return data, mime


def generated_image_store(
    *, conversation_id: UUID, message_id: UUID, data: bytes, mime: str, character_id: int | None, record: dict,
) -> Attachment:
    """Store checked image bytes as a generated attachment at the end of the reply's manifest.

    The blob is written (and its identity recorded) before the rows that name
    it; a crash between leaves a blob no manifest references, which the
    garbage collector removes after its grace period. `record` (the image's
    provenance) is appended to the reply's `metadata["generated_images"]`
    with the attachment's id, in the same transaction as the manifest entry.
    """
    sha = hashlib.sha256(data).hexdigest()
    identity = store.write_bytes(store.conversation_store(conversation_id), data, sha)
    with transaction.atomic():
        message = Message.objects.select_for_update().only("pk", "conversation_id", "metadata").get(pk=message_id)
        entries = MessageAttachment.objects.filter(message_id=message_id)
        if entries.count() >= settings.ELION_ATTACHMENTS_PER_MESSAGE:
            raise GeneratedImageRejected(
                f"this reply already holds {settings.ELION_ATTACHMENTS_PER_MESSAGE} images, the most a message can"
            )
        highest = entries.aggregate(highest=Max("position"))["highest"]
        position = 0 if highest is None else highest + 1
        attachment = Attachment.objects.create(
            sha256=sha, size=len(data), name=f"generated-image-{position + 1}.{_EXTENSIONS.get(mime, 'img')}",
            mime=mime, kind=AttachmentKind.IMAGE, scope_conversation_id=conversation_id,
            attached_at=timezone.now(), generated=True, generated_character_id=character_id,
        )
        MessageAttachment.objects.create(
            conversation_id=conversation_id, message=message, position=position, attachment=attachment
        )
        identities_record(conversation_id, {sha: identity})
        _record_append(message, {**record, "attachment_id": str(attachment.id)})
    return attachment


def generated_image_failure_record(*, message_id: UUID, record: dict) -> None:
    """Append a failed image's record (its `error`) to the reply's `metadata["generated_images"]`."""
    with transaction.atomic():
        _record_append(Message.objects.select_for_update().only("pk", "metadata").get(pk=message_id), record)


def _record_append(message: Message, record: dict) -> None:
    """Precondition: `message` is locked. Moves `updated_at`, as every write to a message row does."""
    metadata = dict(message.metadata or {})
    metadata[GENERATED_IMAGES_KEY] = [*(metadata.get(GENERATED_IMAGES_KEY) or []), record]
    Message.objects.filter(pk=message.pk).update(metadata=metadata, updated_at=timezone.now())


def generated_image_records(message: Message) -> list[dict]:
    """The reply's image records, in the order it asked for them (well-formed entries only)."""
    records = (message.metadata or {}).get(GENERATED_IMAGES_KEY)
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []
