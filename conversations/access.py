"""Fetch-with-access: the one way every interface turns an id into a row, or a 404.

Owns `access_conversation`, `access_folder` and `message_in_conversation`.
Imports models and `elion.errors` only; everything above may import it.
"""

from __future__ import annotations

from uuid import UUID

from conversations.models import Conversation, Folder, Message
from elion.errors import NotFound


def access_conversation(conversation_id: UUID | str, *, lock: bool = False) -> Conversation:
    """Fetch a conversation for the owner, or 404. `lock` takes its row lock.

    Precondition for `lock=True`: the caller is inside a transaction.
    """
    try:
        conversation_id = UUID(str(conversation_id))
    except ValueError as exc:
        raise NotFound("No conversation has that id.", code="conversation_not_found") from exc
    queryset = Conversation.objects.select_for_update() if lock else Conversation.objects
    try:
        return queryset.get(pk=conversation_id)
    except Conversation.DoesNotExist as exc:
        raise NotFound("No conversation has that id.", code="conversation_not_found") from exc


def access_folder(folder_id: int | str | None) -> Folder | None:
    if folder_id in (None, ""):
        return None
    try:
        return Folder.objects.get(pk=int(folder_id))
    except (Folder.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound("No folder has that id.", code="folder_not_found") from exc


def message_in_conversation(conversation: Conversation, message_id: UUID | str | None) -> Message:
    try:
        return Message.objects.get(pk=UUID(str(message_id)), conversation=conversation)
    except (ValueError, TypeError, Message.DoesNotExist) as exc:
        raise NotFound("No message with that id in this conversation.", code="message_not_found") from exc
