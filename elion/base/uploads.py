"""Reading uploaded bytes safely: size caps, text checks, temp-file cleanup.

Every archive and Library upload goes through here, so bad input is a 4xx
with a clear reason (docs/api.md) before anything is stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
from collections.abc import Iterator
from typing import BinaryIO

from django.core.files.uploadedfile import UploadedFile
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from elion.base.errors import InvalidInput, ServiceError

logger = logging.getLogger(__name__)

# Share of control characters (other than tab, newline, CR, form feed) above
# which bytes that happen to decode as UTF-8 are still treated as binary.
CONTROL_CHARACTER_LIMIT = 0.01
_ALLOWED_CONTROLS = {"\t", "\n", "\r", "\f"}


class FileTooLarge(ServiceError):
    status = 413
    code = "file_too_large"


def size_text(limit: int) -> str:
    if limit >= 1024**2:
        return f"{limit / 1024**2:g} MB"
    if limit >= 1024:
        return f"{limit / 1024:g} KB"
    return f"{limit} bytes"


def too_large(what: str, limit: int) -> FileTooLarge:
    return FileTooLarge(f"{what} is larger than the limit of {size_text(limit)}.")


@contextlib.contextmanager
def closing_upload(upload: UploadedFile | None) -> Iterator[UploadedFile | None]:
    """Close the upload afterwards, which removes Django's temporary file at once."""
    try:
        yield upload
    finally:
        if upload is not None:
            upload.close()


def read_limited(stream: BinaryIO, limit: int, what: str) -> bytes:
    """At most `limit` bytes from `stream`; more is a 413 (the declared size is not trusted)."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise too_large(what, limit)
    return data


def read_upload(upload: UploadedFile, limit: int) -> bytes:
    if upload.size is not None and upload.size > limit:
        raise too_large("The file", limit)
    upload.seek(0)
    return read_limited(upload, limit, "The file")


_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime(data: bytes) -> str | None:
    """The image type the bytes themselves declare (PNG, JPEG, GIF, WebP), else None."""
    for signature, mime in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def decode_text(data: bytes) -> str:
    """UTF-8 text with normalised newlines, or a 400 saying why not."""
    if not data.strip():
        raise InvalidInput("The file is empty.", code="empty_file")
    if b"\x00" in data:
        raise InvalidInput("The file is binary, not text (UTF-8 text, Markdown or CSV).", code="not_text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput("The file is not UTF-8 text.", code="not_text") from exc
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in _ALLOWED_CONTROLS)
    if controls > CONTROL_CHARACTER_LIMIT * len(text):
        raise InvalidInput("The file is binary, not text (UTF-8 text, Markdown or CSV).", code="not_text")
    text = normalise_newlines(text)
    if not text.strip():
        raise InvalidInput("The file is empty.", code="empty_file")
    return text


def clean_pasted_text(text: object, limit: int) -> str:
    if not isinstance(text, str):
        raise InvalidInput("text must be a string.", code="invalid_text")
    if len(text.encode()) > limit:
        raise too_large("The text", limit)
    text = normalise_newlines(text)
    if not text.strip():
        raise InvalidInput("The text is empty.", code="empty_file")
    return text


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")


def pdf_text(data: bytes) -> str:
    """The text of every page, pages separated by a form feed; 400 when there is none."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise InvalidInput("The PDF is encrypted; upload an unlocked copy.", code="pdf_encrypted")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except InvalidInput:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        logger.info("unreadable PDF: %s", exc)
        raise InvalidInput("The PDF could not be read.", code="unreadable_pdf") from exc
    text = "\n\f\n".join(page for page in pages if page)
    if not text.strip():
        raise InvalidInput(
            "The PDF has no extractable text (it may be scanned images).", code="pdf_without_text"
        )
    return text
