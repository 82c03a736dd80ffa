"""Reading a ChatGPT data export: `conversations.json` alone or inside the export zip.

Each conversation is a tree (`mapping`: node id → `{message, parent,
children}`); edits and regenerations are sibling branches. The branch the
owner last saw ends at `current_node`, so we walk from there to the root and
keep that branch only. Only what was said between the owner and the assistant
is kept: no system or tool messages, no hidden context, no messages addressed
to a tool, no image parts.

The file is parsed as a stream (ijson), one conversation at a time, so
memory stays bounded whatever the file holds (a 31 KB zip of 30 MB of `{}`
no longer builds millions of objects); it is all checked before anything is
stored, so a malformed export is rejected with nothing imported. The zip is
never extracted to disk: only `conversations.json` is read, with its
unpacked size capped and an implausible compression ratio refused.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import posixpath
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO

import ijson

from archive.parsing import Turn
from archive.uploads import too_large
from elion.errors import InvalidInput
from elion.input_checks import text_check

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


# Text JSON compresses about 5-15:1; far beyond that the member is a zip bomb, not an export.
MAX_COMPRESSION_RATIO = 100
RATIO_CHECKED_ABOVE = 1024**2  # small members may compress as well as they like


class _Limited(io.RawIOBase):
    """A read-only view of `inner` that refuses to give more than `limit` bytes (the declared size is not trusted)."""

    def __init__(self, inner: BinaryIO, limit: int, what: str) -> None:
        self.inner, self.left, self.limit, self.what = inner, limit, limit, what

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:
        data = self.inner.read(min(len(buffer), self.left + 1))
        if len(data) > self.left:
            raise too_large(self.what, self.limit)
        self.left -= len(data)
        buffer[: len(data)] = data
        return len(data)


def _zip_member(archive: zipfile.ZipFile, limits: ExportLimits) -> zipfile.ZipInfo:
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
    if member.file_size > RATIO_CHECKED_ABOVE and member.file_size > MAX_COMPRESSION_RATIO * max(member.compress_size, 1):
        raise InvalidInput(
            f"conversations.json unpacks to {member.file_size // max(member.compress_size, 1):,} times its packed "
            "size, which no real export does; nothing was imported.",
            code="zip_implausible_ratio",
        )
    return member


@contextlib.contextmanager
def export_json_stream(stream: BinaryIO, limits: ExportLimits) -> Iterator[BinaryIO]:
    """The bytes of conversations.json as a stream, from the zip or the file itself, capped at the limit."""
    stream.seek(0)
    if not zipfile.is_zipfile(stream):
        stream.seek(0)
        yield io.BufferedReader(_Limited(stream, limits.max_json_bytes, "conversations.json"))
        return
    stream.seek(0)
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise MalformedExport("The zip file is damaged and cannot be read.", code="bad_zip") from exc
    with archive:
        member = _zip_member(archive, limits)
        with archive.open(member) as inner:
            yield io.BufferedReader(_Limited(inner, limits.max_json_bytes, "conversations.json"))


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


def parse_conversations(stream: io.BufferedReader) -> list[ExportedConversation]:
    """Every conversation's current branch, read one conversation at a time; any structural fault
    rejects the whole file (nothing is stored before this returns)."""
    try:
        if not stream.peek(1):
            raise InvalidInput("The file is empty.", code="empty_file")
        if stream.peek(3)[:3] == b"\xef\xbb\xbf":
            stream.read(3)  # a UTF-8 byte order mark
        events = ijson.parse(stream, use_float=True)
        first = next(events)
        if first[1] != "start_array":
            raise MalformedExport("conversations.json must hold a list of conversations.")
        conversations = []
        for index, item in enumerate(ijson.items(itertools.chain([first], events), "item")):
            # NUL or an unpaired surrogate anywhere: 400, nothing stored.
            text_check(item, f"conversation {index + 1}")
            conversations.append(_conversation(item, index))
        return conversations
    except ijson.JSONError as exc:
        raise MalformedExport(
            "conversations.json is not valid JSON; upload the ChatGPT export zip or its conversations.json."
        ) from exc
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, UnicodeDecodeError) as exc:
        # A damaged member surfaces while it streams: zlib errors, CRC mismatches (BadZipFile), a cut stream.
        raise MalformedExport("The zip file is damaged and cannot be read.", code="bad_zip") from exc
