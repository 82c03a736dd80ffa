"""How the model sees an app event in a conversation's history (issue 44): never as the owner speaking.

An app event (`transcript.models.messages.APP_EVENT_KINDS`) sits on the user
side of the tree so the reply it asks for is an ordinary reply to it. Every
consumer of speech leaves it out (handoffs, recall, search, the estimate,
exports); only the request carries it, framed by this module: a check-in's
trigger reads "Scheduled check-in the owner set up: …", the brief in the owner's
words with what it is around it — the newest input of the check-in's own reply,
and history after it. Pure: a message row in, text out.
"""

from __future__ import annotations

from transcript.models import Message, MessageKind

SCHEDULED_CHECK_IN_OPENING = "Scheduled check-in the owner set up"
SCHEDULED_CHECK_IN_CLOSING = (
    "The owner is not writing now: they scheduled this earlier and it is due. Write to them first, in your own "
    "voice, as this conversation stands."
)


def scheduled_check_in_text(*, brief: str, title: str = "", due_local: str = "") -> str:
    """A check-in's trigger as the model reads it: the owner's scheduled request, framed."""
    about = ", ".join(part for part in (f'"{title}"' if title else "", f"due {due_local}" if due_local else "") if part)
    heading = f"{SCHEDULED_CHECK_IN_OPENING} ({about})" if about else SCHEDULED_CHECK_IN_OPENING
    return f"[{heading}: {brief}]\n\n{SCHEDULED_CHECK_IN_CLOSING}"


def request_text_of(message: Message) -> str:
    """The text a history turn carries for `message`: its content, or an app event's framing."""
    if message.kind == MessageKind.CHECK_IN_TRIGGER:
        record = (message.metadata or {}).get("check_in") or {}
        return scheduled_check_in_text(
            brief=message.content, title=str(record.get("title") or ""), due_local=str(record.get("due_local") or "")
        )
    return message.content
