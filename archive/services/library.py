"""The Library: files the owner places for Elion to read, page by page.

Text, Markdown and CSV are stored as their UTF-8 text; a PDF is stored as the
text pypdf extracts from it (a PDF with no extractable text is refused rather
than stored empty). The same bytes uploaded twice are one file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.db.models.functions import Length

from archive.models import LibraryFile, LibraryFileKind
from elion.base.errors import InvalidInput
from elion.base.rows import access_row
from elion.base.uploads import clean_pasted_text, closing_upload, decode_text, pdf_text, read_upload, sha256_hex

NAME_MAX = 300
PAGE_CHARACTERS = 8_000
_SUFFIX_KINDS = {
    ".txt": LibraryFileKind.TEXT,
    ".text": LibraryFileKind.TEXT,
    ".md": LibraryFileKind.MARKDOWN,
    ".markdown": LibraryFileKind.MARKDOWN,
    ".csv": LibraryFileKind.CSV,
    ".pdf": LibraryFileKind.PDF,
}


@dataclass(frozen=True)
class LibraryResult:
    file: LibraryFile
    duplicate: bool


def kind_for(name: str, data: bytes) -> str:
    if data.startswith(b"%PDF-"):
        return LibraryFileKind.PDF
    kind = _SUFFIX_KINDS.get(PurePath(name).suffix.lower())
    if kind == LibraryFileKind.PDF:
        raise InvalidInput("The file is named .pdf but is not a PDF.", code="not_pdf")
    if kind is None and PurePath(name).suffix:
        raise InvalidInput(
            "The Library reads text (.txt), Markdown (.md), CSV (.csv) and PDF (.pdf) files.",
            code="unsupported_file_type",
        )
    return kind or LibraryFileKind.TEXT


def _store(*, name: str, kind: str, digest: str, size: int, text: str) -> LibraryResult:
    existing = LibraryFile.objects.filter(sha256=digest).first()
    if existing is not None:
        return LibraryResult(existing, duplicate=True)
    try:
        with transaction.atomic():
            file = LibraryFile.objects.create(name=name, kind=kind, sha256=digest, size=size, text=text)
    except IntegrityError:
        existing = LibraryFile.objects.filter(sha256=digest).first()
        if existing is None:
            raise
        return LibraryResult(existing, duplicate=True)
    return LibraryResult(file, duplicate=False)


def _clean_name(*candidates: str) -> str:
    for candidate in candidates:
        flat = " ".join((candidate or "").split())
        if flat:
            return flat[:NAME_MAX]
    return "Untitled file"


def library_file_upload(*, upload: UploadedFile, name: str = "") -> LibraryResult:
    with closing_upload(upload):
        if upload is None:
            raise InvalidInput("Attach a file, or send name and text.", code="missing_file")
        filename = upload.name or ""
        data = read_upload(upload, settings.ELION_ARCHIVE_MAX_FILE_BYTES)
    if not data.strip():
        raise InvalidInput("The file is empty.", code="empty_file")
    kind = kind_for(filename, data)
    text = pdf_text(data) if kind == LibraryFileKind.PDF else decode_text(data)
    return _store(name=_clean_name(name, filename), kind=kind, digest=sha256_hex(data), size=len(data), text=text)


def library_file_add_text(*, name: object, text: object) -> LibraryResult:
    text = clean_pasted_text(text, settings.ELION_ARCHIVE_MAX_FILE_BYTES)
    name = _clean_name(name if isinstance(name, str) else "")
    kind = _SUFFIX_KINDS.get(PurePath(name).suffix.lower(), LibraryFileKind.TEXT)
    if kind == LibraryFileKind.PDF:
        kind = LibraryFileKind.TEXT
    data = text.encode()
    return _store(name=name, kind=kind, digest=sha256_hex(data), size=len(data), text=text)


def access_library_file(file_id: int | str) -> LibraryFile:
    return access_row(
        LibraryFile.objects.all(), file_id, kind="int", missing="No Library file has that id.", code="library_file_not_found"
    )


@transaction.atomic
def library_file_delete(*, file_id: int | str) -> None:
    access_library_file(file_id).delete()


def library_page(file: LibraryFile, *, offset: int = 0, limit: int = PAGE_CHARACTERS) -> dict:
    """One page of the file's text from character `offset`; `next_offset` is null at the end."""
    if offset < 0 or limit < 1:
        raise InvalidInput("offset must be 0 or more and limit at least 1.", code="invalid_page")
    limit = min(limit, PAGE_CHARACTERS)
    total = len(file.text)
    end = min(offset + limit, total)
    return {
        "id": file.pk,
        "name": file.name,
        "kind": file.kind,
        "offset": offset,
        "next_offset": end if end < total else None,
        "total_characters": total,
        "text": file.text[offset:end],
    }


def library_files() -> QuerySet[LibraryFile]:
    """Every Library file without its text, with its length in characters."""
    return LibraryFile.objects.annotate(characters=Length("text")).defer("text").order_by("name", "id")


def library_file_repr(file: LibraryFile) -> dict:
    characters = getattr(file, "characters", None)
    return {
        "id": file.pk,
        "name": file.name,
        "kind": file.kind,
        "size": file.size,
        "characters": characters if characters is not None else len(file.text),
        "created_at": file.created_at.isoformat(),
    }
