"""Bulk import of memories from JSON or CSV, with a preview that saves nothing.

Accepted shapes:
- JSON: a list whose items are strings (the text) or objects with `text`
  and optional `category`, `importance`, `active`; or `{"memories": [...]}`.
- CSV: a header row naming `text` and optionally `category`, `importance`;
  without a header the columns are read in that order.
- Claude.ai's `memories.json`: a list of objects holding `conversations_memory`
  (Claude's memory of the owner, one text) and/or `project_memories` (a text
  per project: an object of texts, or a list of them). Each paragraph becomes
  one memory (`general`, or `project`), under the heading it stands below.

A file that does not parse, or any item that fails validation, rejects the
whole import with the line (or item) at fault. An import is one transaction
and, like an add, reaches new threads only.
"""

from __future__ import annotations

import csv
import io
import json
import re

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from elion.base.errors import InvalidInput
from memories.models import MEMORY_TEXT_MAX, SOURCE_FILE_MAX, Memory, MemoryCategory, MemorySource
from memories.services.memory_writes import MemoryDraft, memory_draft, next_position
from memories.services.write_lock import global_write_lock

IMPORT_MAX_ITEMS = 2_000
IMPORT_MAX_CHARACTERS = 2_000_000
FORMATS = ("json", "csv")


def _fail(where: str, exc: InvalidInput) -> InvalidInput:
    return InvalidInput(f"{where}: {exc.detail} Nothing was imported.", code=exc.code)


# --- Claude.ai's memories.json ---------------------------------------------------------

CLAUDE_MEMORY_FIELDS = ("conversations_memory", "project_memories")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_HEADING = re.compile(r"^(?:#{1,6}[ \t]+(?P<hash>.+?)|\*\*(?P<bold>.+?)\*\*:?|__(?P<under>.+?)__:?)[ \t]*$")
HEADING_MAX_CHARACTERS = 120


def claude_memories_shaped(items: object) -> bool:
    """Is this Claude.ai's `memories.json`: objects with `conversations_memory` / `project_memories`, no `text`?"""
    return (
        isinstance(items, list) and bool(items) and all(isinstance(item, dict) for item in items)
        and any(name in item for item in items for name in CLAUDE_MEMORY_FIELDS)
        and not any("text" in item for item in items)
    )


def _heading(paragraph: str) -> str | None:
    """The words of a paragraph that is only a heading (`## Work`, `**Work context**`), else None."""
    if "\n" in paragraph or len(paragraph) > HEADING_MAX_CHARACTERS:
        return None
    found = _HEADING.match(paragraph)
    if found is None:
        return None
    return next(group for group in found.groups() if group).strip().rstrip(":").strip() or None


def _cut(text: str, limit: int = MEMORY_TEXT_MAX) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut at a line break or a space where there is one."""
    pieces = []
    while len(text) > limit:
        cut = max(text.rfind("\n", 0, limit + 1), text.rfind(" ", 0, limit + 1))
        cut = cut if cut > 0 else limit
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    return [*pieces, text] if text else pieces


def claude_memory_texts(text: object) -> list[str]:
    """Claude's memory text as separate memories: one per paragraph, each under the heading above it."""
    if not isinstance(text, str):
        return []
    memories: list[str] = []
    heading = ""
    for paragraph in _PARAGRAPH_BREAK.split(text.replace("\r\n", "\n").replace("\r", "\n")):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        words = _heading(paragraph)
        if words is not None:
            heading = words
            continue
        if heading:
            separator = "\n" if "\n" in paragraph else " "  # a list stays below its heading
            paragraph = f"{heading}:{separator}{paragraph}"
        memories += _cut(paragraph)
    return memories


def _project_texts(value: object) -> list[object]:
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if isinstance(value, list) else []


def claude_memory_items(items: list[dict]) -> list[dict]:
    """Import items (`{"text", "category"}`) from the objects of Claude.ai's `memories.json`."""
    found = []
    for item in items:
        found += [{"text": t, "category": MemoryCategory.GENERAL.value}
                  for t in claude_memory_texts(item.get("conversations_memory"))]
        for project in _project_texts(item.get("project_memories")):
            found += [{"text": t, "category": MemoryCategory.PROJECT.value} for t in claude_memory_texts(project)]
    return found


def drafts_from_items(items: object) -> list[MemoryDraft]:
    """Check already-decoded JSON items (strings or objects, or Claude.ai's `memories.json`)."""
    if isinstance(items, dict) and "memories" in items:
        items = items["memories"]
    if claude_memories_shaped(items):
        items = claude_memory_items(items)
    if not isinstance(items, list):
        raise InvalidInput("The import must be a JSON list of memories.", code="invalid_import")
    if not items:
        raise InvalidInput("The import holds no memories.", code="empty_import")
    if len(items) > IMPORT_MAX_ITEMS:
        raise InvalidInput(f"An import can hold at most {IMPORT_MAX_ITEMS:,} memories.", code="import_too_large")
    drafts = []
    for number, item in enumerate(items, start=1):
        try:
            if isinstance(item, str):
                drafts.append(memory_draft(text=item))
            elif isinstance(item, dict):
                unknown = set(item) - {"text", "category", "importance", "active"}
                if unknown:
                    raise InvalidInput(f"unknown fields {', '.join(sorted(unknown))}.", code="invalid_import")
                drafts.append(
                    memory_draft(
                        text=item.get("text"),
                        category=item.get("category"),
                        importance=item.get("importance"),
                        active=item.get("active", True),
                    )
                )
            else:
                raise InvalidInput("each memory must be a string or an object with text.", code="invalid_import")
        except InvalidInput as exc:
            raise _fail(f"Memory {number}", exc) from exc
    return drafts


def _drafts_from_json(text: str) -> list[MemoryDraft]:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"Line {exc.lineno}, column {exc.colno}: the JSON does not parse ({exc.msg}). Nothing was imported.",
            code="import_parse_error",
        ) from exc
    return drafts_from_items(items)


def _drafts_from_csv(text: str) -> list[MemoryDraft]:
    reader = csv.reader(io.StringIO(text), strict=True)
    drafts: list[MemoryDraft] = []
    columns = ["text", "category", "importance"]
    try:
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            header = [cell.strip().lower() for cell in row]
            if not drafts and "text" in header and line == _first_content_line(text):
                unknown = set(header) - {"text", "category", "importance", "active", ""}
                if unknown:
                    raise InvalidInput(
                        f"Line {line}: unknown columns {', '.join(sorted(unknown))}. Nothing was imported.",
                        code="import_parse_error",
                    )
                columns = header
                continue
            if len(row) > len(columns):
                raise InvalidInput(
                    f"Line {line}: {len(row)} columns where at most {len(columns)} are expected. Nothing was imported.",
                    code="import_parse_error",
                )
            values = dict(zip(columns, row, strict=False))
            try:
                drafts.append(
                    memory_draft(
                        text=values.get("text"),
                        category=values.get("category"),
                        importance=values.get("importance"),
                        active=_csv_bool(values.get("active")),
                    )
                )
            except InvalidInput as exc:
                raise _fail(f"Line {line}", exc) from exc
            if len(drafts) > IMPORT_MAX_ITEMS:
                raise InvalidInput(
                    f"An import can hold at most {IMPORT_MAX_ITEMS:,} memories.", code="import_too_large"
                )
    except csv.Error as exc:
        raise InvalidInput(
            f"Line {reader.line_num}: the CSV does not parse ({exc}). Nothing was imported.",
            code="import_parse_error",
        ) from exc
    if not drafts:
        raise InvalidInput("The import holds no memories.", code="empty_import")
    return drafts


def _first_content_line(text: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            return number
    return 1


def _csv_bool(value: str | None) -> bool:
    if value is None or not value.strip():
        return True
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise InvalidInput(f"active must be true or false; got {value!r}.", code="invalid_active")


def guess_format(text: str, filename: str = "") -> str:
    if filename.lower().endswith(".csv"):
        return "csv"
    if filename.lower().endswith(".json"):
        return "json"
    return "json" if text.lstrip().startswith(("[", "{")) else "csv"


IMPORT_FILE_MAX_BYTES = 4 * 1024 * 1024


def import_file_read(upload: UploadedFile) -> str:
    """An uploaded import file's text: at most 4 MB, UTF-8 (the API's `file` part and the page's file field)."""
    if upload.size is not None and upload.size > IMPORT_FILE_MAX_BYTES:
        raise InvalidInput("The import file is larger than 4 MB.", code="import_too_large")
    data = upload.read(IMPORT_FILE_MAX_BYTES + 1)  # the declared size is not trusted
    if len(data) > IMPORT_FILE_MAX_BYTES:
        raise InvalidInput("The import file is larger than 4 MB.", code="import_too_large")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("The import file is not UTF-8 text.", code="import_parse_error") from exc


def memories_parse(*, text: object, fmt: str | None = None, filename: str = "") -> list[MemoryDraft]:
    """Parse an import (the preview step): checks everything, saves nothing."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("The import is empty.", code="empty_import")
    if len(text) > IMPORT_MAX_CHARACTERS:
        raise InvalidInput(
            f"An import can be at most {IMPORT_MAX_CHARACTERS:,} characters.", code="import_too_large"
        )
    fmt = (fmt or guess_format(text, filename)).lower()
    if fmt not in FORMATS:
        raise InvalidInput("format must be json or csv.", code="unknown_import_format")
    text = text.lstrip("\ufeff")
    return _drafts_from_json(text) if fmt == "json" else _drafts_from_csv(text)


@transaction.atomic
def memories_import(*, drafts: list[MemoryDraft], source_file: object = "") -> list[Memory]:
    """Save checked drafts together, after the existing memories. New threads only.

    Each records its source: imported, from `source_file` (the uploaded
    file's name; empty for pasted text)."""
    global_write_lock()
    start = next_position()
    file_name = source_file.strip()[:SOURCE_FILE_MAX] if isinstance(source_file, str) else ""
    return Memory.objects.bulk_create(
        [
            Memory(
                text=draft.text,
                category=draft.category,
                importance=draft.importance,
                active=draft.active,
                position=start + offset,
                source=MemorySource.IMPORTED,
                source_file=file_name,
            )
            for offset, draft in enumerate(drafts)
        ]
    )
