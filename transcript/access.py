"""Fetch-with-access: the one way every interface turns an id into a row, or a 404.

Owns `access_conversation`, `access_folder` and `message_in_conversation`.
Imports models and `elion.base.errors` only; everything above may import it.
"""

from __future__ import annotations

from uuid import UUID

from elion.base.rows import access_row
from transcript.models import Conversation, Folder, Message


def access_conversation(conversation_id: UUID | str, *, lock: bool = False) -> Conversation:
    """Fetch a conversation for the owner, or 404. `lock` takes its row lock.

    Precondition for `lock=True`: the caller is inside a transaction.
    """
    return access_row(
        Conversation.objects.all(),
        conversation_id,
        kind="uuid",
        missing="No conversation has that id.",
        code="conversation_not_found",
        lock=lock,
    )


def access_folder(folder_id: int | str | None) -> Folder | None:
    if folder_id in (None, ""):
        return None
    return access_row(Folder.objects.all(), folder_id, kind="int", missing="No folder has that id.", code="folder_not_found")


def message_in_conversation(conversation: Conversation, message_id: UUID | str | None) -> Message:
    return access_row(
        Message.objects.filter(conversation=conversation),
        message_id,
        kind="uuid",
        missing="No message with that id in this conversation.",
        code="message_not_found",
    )
