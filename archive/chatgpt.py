"""Reading a ChatGPT data export: `conversations.json` alone or inside the export zip.

Each conversation is a tree (`mapping`: node id → `{message, parent,
children}`); edits and regenerations are sibling branches. The branch the
owner last saw ends at `current_node`, so we walk from there to the root and
keep that branch only. Only what was said between the owner and the assistant
is kept: no system or tool messages, no hidden context, no messages addressed
to a tool, no image parts.

The whole file is read and checked before anything is stored, so a malformed
export is rejected with nothing imported. The zip is never extracted to disk:
only `conversations.json` is read, with its unpacked size capped.
"""

from __future__ import annotations

import json
import posixpath
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

from archive.parsing import Turn
from archive.uploads import read_limited, too_large
from elion.errors import InvalidInput
from elion.input_checks import MAX_JSON_DEPTH, json_too_deep, text_check

CONVERSATIONS_MEMBER = "conversations.json"
_SPOKEN_CONTENT_TYPES = {"text", "multimodal_text"}


class MalformedExport(InvalidInput):
    code = "malformed_chatgpt_export"


@dataclass(frozen=True)
class ExportLimits:
    max_json_bytes: int
    max_members: int


@dataclass(frozen=True)
class ExportedConversation:
    external_id: str
    title: str
    created_at: datetime | None
    updated_at: datetime | None
    # Speaker names are left as roles ("user" / "assistant"); the importer labels them.
    turns: tuple[Turn, ...]


def _unsafe_member(name: str) -> bool:
    if not name or name.startswith(("/", "\\")) or "\\" in name or "\x00" in name:
        return True
    if ":" in name.split("/", 1)[0]:  # a drive letter such as C:
        return True
    return ".." in name.split("/")


def _conversations_json_from_zip(stream: BinaryIO, limits: ExportLimits) -> bytes:
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise MalformedExport("The zip file is damaged and cannot be read.", code="bad_zip") from exc
    with archive:
        members = archive.infolist()
        if len(members) > limits.max_members:
            raise InvalidInput(
                f"The zip lists {len(members):,} files; at most {limits.max_members:,} are accepted.",
                code="zip_too_many_members",
            )
        unsafe = next((m.filename for m in members if _unsafe_member(m.filename)), None)
        if unsafe is not None:
            raise InvalidInput(
                f"The zip contains an unsafe path ({unsafe[:80]!r}); nothing was imported.", code="zip_unsafe_path"
            )
        candidates = [m for m in members if posixpath.basename(m.filename) == CONVERSATIONS_MEMBER]
        if not candidates:
            raise MalformedExport(
                "The zip has no conversations.json; is it a ChatGPT data export?", code="missing_conversations_json"
            )
        member = min(candidates, key=lambda m: m.filename.count("/"))
        if member.flag_bits & 0x1:
            raise InvalidInput("The zip is encrypted.", code="zip_encrypted")
        if member.file_size > limits.max_json_bytes:
            raise too_large("conversations.json", limits.max_json_bytes)
        try:
            with archive.open(member) as inner:
                return read_limited(inner, limits.max_json_bytes, "conversations.json")
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            # zlib errors surface as zipfile/OS errors; CRC mismatches as BadZipFile.
            raise MalformedExport("The zip file is damaged and cannot be read.", code="bad_zip") from exc


def read_export_bytes(stream: BinaryIO, limits: ExportLimits) -> bytes:
    """The bytes of conversations.json, from the zip or the file itself."""
    stream.seek(0)
    if zipfile.is_zipfile(stream):
        stream.seek(0)
        return _conversations_json_from_zip(stream, limits)
    stream.seek(0)
    return read_limited(stream, limits.max_json_bytes, "conversations.json")


def _moment(value: object) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _spoken_text(message: dict) -> tuple[str, str] | None:
    """`(role, text)` for a message the owner saw in the conversation, else None."""
    author = message.get("author") if isinstance(message.get("author"), dict) else {}
    role = author.get("role")
    if not isinstance(role, str) or role not in ("user", "assistant"):
        return None
    if message.get("recipient", "all") != "all":  # addressed to a tool (browser, python…)
        return None
    metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    if metadata.get("is_visually_hidden_from_conversation"):
        return None
    content = message.get("content") if isinstance(message.get("content"), dict) else {}
    content_type = content.get("content_type")
    if not isinstance(content_type, str) or content_type not in _SPOKEN_CONTENT_TYPES:
        return None
    parts = content.get("parts") if isinstance(content.get("parts"), list) else []
    text = "\n".join(part for part in parts if isinstance(part, str)).strip()
    return (role, text) if text else None


def current_branch(conversation: dict, index: int) -> list[dict]:
    """Messages from the root to `current_node`, in order."""
    mapping = conversation["mapping"]
    node_id = conversation.get("current_node")
    if node_id is None:
        return []
    branch: list[dict] = []
    seen: set[str] = set()
    while node_id is not None:
        if not isinstance(node_id, str):
            raise MalformedExport(f"Conversation {index + 1} names a message node that is not a string id.")
        if node_id in seen:
            raise MalformedExport(f"Conversation {index + 1} has a cycle in its message tree.")
        seen.add(node_id)
        node = mapping.get(node_id)
        if not isinstance(node, dict):
            raise MalformedExport(f"Conversation {index + 1} refers to a message node that is missing.")
        if isinstance(node.get("message"), dict):
            branch.append(node["message"])
        node_id = node.get("parent")
    branch.reverse()
    return branch


def _conversation(raw: object, index: int) -> ExportedConversation:
    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        raise MalformedExport(f"Conversation {index + 1} has no message mapping.")
    turns = []
    for message in current_branch(raw, index):
        spoken = _spoken_text(message)
        if spoken is not None:
            role, text = spoken
            turns.append(Turn(speaker=role, role=role, text=text, spoken_at=_moment(message.get("create_time"))))
    external_id = raw.get("conversation_id") or raw.get("id") or ""
    if not isinstance(external_id, str | int) or isinstance(external_id, bool):
        external_id = ""
    title = raw.get("title") if isinstance(raw.get("title"), str) else ""
    return ExportedConversation(
        external_id=str(external_id),
        title=" ".join(title.split())[:250],
        created_at=_moment(raw.get("create_time")),
        updated_at=_moment(raw.get("update_time")),
        turns=tuple(turns),
    )


def parse_conversations(data: bytes) -> list[ExportedConversation]:
    """Every conversation's current branch; any structural fault rejects the whole file."""
    if not data.strip():
        raise InvalidInput("The file is empty.", code="empty_file")
    try:
        text = data.decode("utf-8-sig")
        if json_too_deep(text):
            raise MalformedExport(f"conversations.json is nested deeper than {MAX_JSON_DEPTH} levels.")
        raw = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise MalformedExport(
            "conversations.json is not valid JSON; upload the ChatGPT export zip or its conversations.json."
        ) from exc
    if not isinstance(raw, list):
        raise MalformedExport("conversations.json must hold a list of conversations.")
    text_check(raw, "conversations.json")  # NUL or an unpaired surrogate anywhere: 400, nothing stored
    return [_conversation(item, index) for index, item in enumerate(raw)]
