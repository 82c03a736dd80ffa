"""A send's input: the parsed, checked command (`SendCommand`), from an API body or a WebSocket frame.

Shape only: no database, no provider. Imports `elion.base.errors`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from uuid import UUID

from django.conf import settings

from elion.base.errors import InvalidInput
from transcript.attachments.manifests import attachment_ids_clean


class ParentChoice(enum.Enum):
    """Where a send attaches when it names no parent: after the head (the usual send)."""

    HEAD = "head"


FROM_HEAD = ParentChoice.HEAD


@dataclass(frozen=True)
class SendCommand:
    conversation_id: UUID
    content: str
    client_message_id: UUID | None = None
    # FROM_HEAD: continue from the head; None: start a new root (edit the first turn).
    parent_id: UUID | None | ParentChoice = FROM_HEAD
    pinned_character_id: int | None = None
    # Uploaded attachments for this turn, in manifest order.
    attachment_ids: tuple[UUID, ...] = ()
    # Spoken (Talk or dictation, issue 43): stored as the turn's `metadata.voice`; nothing else differs.
    voice: bool = False
    # A check-in's run (issue 44), never a client: the turn is its trigger, an app event (kind
    # `check_in_trigger`, `content` the brief) recording this in `metadata.check_in` ({"id", "title",
    # "due_at", "due_local"}), and the reply to it is an ordinary reply.
    check_in: dict | None = None


def validate_content(content: object, *, has_attachments: bool = False) -> str:
    if has_attachments and content in (None, ""):
        return ""  # an attachment-only turn
    if not isinstance(content, str) or (not content.strip() and not has_attachments):
        raise InvalidInput("A message needs some text or an attachment.", code="empty_message")
    limit = settings.ELION_MAX_MESSAGE_CHARACTERS
    if len(content) > limit:
        raise InvalidInput(
            f"A message can be at most {limit:,} characters; this one has {len(content):,}.",
            code="message_too_long",
        )
    return content


def _parse_uuid(value: object, name: str) -> UUID:
    try:
        return UUID(str(value))
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"{name} must be a UUID.", code=f"invalid_{name}") from exc


def send_command_from_payload(conversation_id: UUID, payload: dict) -> SendCommand:
    """Shape-check a send body (docs/api.md "Sending") into a command."""
    if not isinstance(payload, dict):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    client_id = payload.get("client_message_id")
    parent = payload.get("parent_id", FROM_HEAD)
    if parent is not FROM_HEAD and parent is not None:
        parent = _parse_uuid(parent, "parent_id")
    pinned = payload.get("pinned_character_id")
    if pinned is not None and (isinstance(pinned, bool) or not isinstance(pinned, int)):
        raise InvalidInput("pinned_character_id must be an integer.", code="invalid_pinned_character_id")
    attachment_ids = attachment_ids_clean(payload.get("attachment_ids"))
    voice = payload.get("voice", False)
    if not isinstance(voice, bool):
        raise InvalidInput("voice must be true or false.", code="invalid_voice_flag")
    return SendCommand(
        conversation_id=conversation_id,
        content=validate_content(payload.get("content"), has_attachments=bool(attachment_ids)),
        attachment_ids=attachment_ids,
        client_message_id=_parse_uuid(client_id, "client_message_id") if client_id else None,
        parent_id=parent,
        pinned_character_id=pinned,
        voice=voice,
    )
