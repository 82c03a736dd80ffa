"""The notification for a reply Elion wrote by itself (a check-in, issue 44): what it says and where it opens.

The check-in runner calls `notify_reply` once the reply is stored and committed (`notify_owner`'s precondition).
The title names the assistant as the owner set it ("Elion Voicefire wrote"); a failed reply says so instead,
and never carries text. The URL opens the conversation at the reply, in the form docs/api.md gives links to a message
(`/c/<id>/?around=<id>#message-<id>`): the page shows the window around it, however old, and scrolls to its
anchor (`templates/chat/_message.html`).
"""

from __future__ import annotations

from elion.base.assistant_settings import assistant_settings_read
from operations.push.delivery import PushReport, notify_owner


def reply_url(*, conversation_id: object, message_id: object) -> str:
    return f"/c/{conversation_id}/?around={message_id}#message-{message_id}"


def reply_title(*, assistant_name: str, failed: bool) -> str:
    return f"{assistant_name} could not reply" if failed else f"{assistant_name} wrote"


def notify_reply(*, conversation_id: object, message_id: object, text: str | None, failed: bool = False) -> PushReport | None:
    """One notification for a stored reply; its text only when `push_shows_text` is on (`notify_owner`)."""
    name = assistant_settings_read().display_name
    return notify_owner(
        title=reply_title(assistant_name=name, failed=failed),
        url=reply_url(conversation_id=conversation_id, message_id=message_id),
        tag=f"conversation-{conversation_id}",
        text=None if failed else text,
    )
