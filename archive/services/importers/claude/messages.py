"""One message of a Claude.ai export: who said it, what it said, and the text of the files attached to it.

Each message has a `sender` (`human` or `assistant`), `content` blocks and, in
older exports, only a flat `text`. Only what the owner and the assistant said
to each other is speech: the `text` blocks of `content` (or `text` when a
message has no blocks). Never `thinking` blocks, `tool_use` / `tool_result`
blocks or any other block. A file the owner attached is kept beside the turns,
never as speech: its `extracted_content` is an `AttachmentText`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from archive.services.importers.export_reader import UnreadableConversation
from archive.services.parsing import Turn

# Claude's senders, as the archive's roles.
_ROLES = {"human": "user", "assistant": "assistant"}
_TIME_TEXT_MAX = 64
ATTACHMENT_NAME_MAX = 200


@dataclass(frozen=True)
class AttachmentText:
    """The text Claude.ai extracted from a file the owner attached; `after_turn` counts the turns said up to it."""

    after_turn: int
    name: str
    text: str


def iso_moment(value: object) -> datetime | None:
    """An ISO 8601 time (`2024-05-01T12:34:56.789012Z`) as an aware datetime; None for anything else."""
    if not isinstance(value, str) or len(value) > _TIME_TEXT_MAX:
        return None
    try:
        moment = datetime.fromisoformat(value)
        # In UTC, as the databases keep it: year 1 at +14:00 (or 9999 at -14:00) does not exist there.
        return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        return None


def flat_text(value: object, limit: int) -> str:
    return " ".join(value.split())[:limit] if isinstance(value, str) else ""


def _blocks_text(content: list) -> str:
    """The `text` blocks, joined; every other block (thinking, tool_use, tool_result…) is not speech."""
    texts = [
        block.get("text") for block in content if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "\n\n".join(text.strip() for text in texts if isinstance(text, str) and text.strip())


def message_text(message: dict, number: int) -> str:
    """What a message said ("" for nothing); UnreadableConversation when its fields have the wrong types."""
    content = message.get("content")
    if isinstance(content, list) and content:
        return _blocks_text(content)
    if content not in (None, []):
        raise UnreadableConversation(f"message {number} has content that is not a list")
    text = message.get("text")  # older exports: no blocks, only the text
    if text is None:
        return ""
    if not isinstance(text, str):
        raise UnreadableConversation(f"message {number} has text that is not a string")
    return text.strip()


def message_role(message: dict, number: int) -> str | None:
    """"user" / "assistant", or None for a sender that does not speak in the conversation."""
    sender = message.get("sender")
    if not isinstance(sender, str):
        raise UnreadableConversation(f"message {number} has no sender")
    return _ROLES.get(sender)


def attachment_texts(message: dict, after_turn: int) -> list[AttachmentText]:
    """The extracted text of each file attached to the message (files without one are not in the export)."""
    attachments = message.get("attachments")
    if not isinstance(attachments, list):
        return []
    found = []
    for attachment in attachments:
        if not isinstance(attachment, dict):
            continue
        text = attachment.get("extracted_content")
        if isinstance(text, str) and text.strip():
            name = flat_text(attachment.get("file_name"), ATTACHMENT_NAME_MAX) or "attachment"
            found.append(AttachmentText(after_turn, name, text.strip()))
    return found


@dataclass(frozen=True)
class Said:
    """What one message contributes: its turn (None when it said nothing) and its files' text."""

    turn: Turn | None
    attachments: list[AttachmentText]


def message_said(message: dict, number: int, turns_before: int) -> Said | None:
    """None for a sender that does not speak in the conversation."""
    role = message_role(message, number)
    if role is None:
        return None
    text = message_text(message, number)
    turn = Turn(speaker=role, role=role, text=text, spoken_at=iso_moment(message.get("created_at"))) if text else None
    return Said(turn, attachment_texts(message, turns_before + (1 if turn else 0)))
