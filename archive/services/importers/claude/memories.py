"""What a Claude.ai export's `memories.json` offers the memory import.

`memories.json` (a list with an object holding `conversations_memory` text
and/or `project_memories`) is read apart from the conversations: the memory
import (`memories.services.importing`) understands it, and the importer offers
what it finds, less what the memories already hold word for word, as
suggestions the owner confirms. Nothing is added to the memories here.
"""

from __future__ import annotations

import posixpath

from archive.services.importers.export_reader import DAMAGED_ZIP, ExportFiles
from elion.base.errors import InvalidInput
from elion.base.input_checks import json_load_checked
from memories.models import Memory
from memories.services import importing

MEMORIES_MEMBER = "memories.json"


class UnreadableMemories(Exception):
    """`memories.json` is in the zip but cannot be read; the conversations are imported all the same."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def memories_member_bytes(export: ExportFiles, limit: int) -> bytes | None:
    """The bytes of the zip's `memories.json` (the shallowest), None when the upload has none.

    Raises UnreadableMemories (its reason) when the member is larger than `limit` or damaged."""
    if export.archive is None:
        return None
    found = [m for m in export.archive.infolist() if posixpath.basename(m.filename) == MEMORIES_MEMBER]
    if not found:
        return None
    member = min(found, key=lambda m: m.filename.count("/"))
    if member.file_size > limit or member.flag_bits & 0x1:
        raise UnreadableMemories(f"{MEMORIES_MEMBER} is encrypted or larger than {limit:,} bytes")
    try:
        with export.archive.open(member) as inner:
            data = inner.read(limit + 1)
    except DAMAGED_ZIP as exc:
        raise UnreadableMemories(f"{MEMORIES_MEMBER} is damaged in the zip") from exc
    if len(data) > limit:
        raise UnreadableMemories(f"{MEMORIES_MEMBER} is larger than {limit:,} bytes")
    return data


def claude_memory_suggestions(data: bytes) -> list[dict]:
    """What `memories.json` offers the memory import, less what the memories already hold word for word;
    UnreadableMemories saying why it cannot be read."""
    try:
        value = json_load_checked(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise UnreadableMemories(f"{MEMORIES_MEMBER} is not UTF-8 text") from exc
    except InvalidInput as exc:
        raise UnreadableMemories(f"{MEMORIES_MEMBER}: {exc.detail}") from exc
    if not importing.claude_memories_shaped(value):
        raise UnreadableMemories(f"{MEMORIES_MEMBER} holds no conversations_memory or project_memories")
    try:
        drafts = importing.drafts_from_items(value)
    except InvalidInput as exc:
        if exc.code == "empty_import":
            return []
        raise UnreadableMemories(f"{MEMORIES_MEMBER}: {exc.detail}") from exc
    held = set(Memory.objects.filter(text__in=[d.text for d in drafts]).values_list("text", flat=True))
    offered = {d.text: d for d in drafts if d.text not in held}
    return [{"text": d.text, "category": d.category} for d in offered.values()]
