"""Uploading an attachment: the file checked (size, emptiness, type sniffed from the bytes, text a model
can read) and stored once as a content-addressed blob, not yet part of any message (seed 004, DESIGN.md
"Attachments")."""

from __future__ import annotations

import hashlib
import unicodedata

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from elion.base.errors import InvalidInput, ServiceError
from elion.base.uploads import decode_text, image_mime, pdf_text, size_text
from transcript.access import access_conversation
from transcript.attachments import store
from transcript.models import Attachment, AttachmentKind

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
