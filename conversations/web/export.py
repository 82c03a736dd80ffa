"""Conversation exports: Markdown with speaker labels, and JSON.

Exports carry the live branch, including Branch / Fresh Chat handoff bubbles
(they are history), but never the stored static prompt. The JSON export
also lists the artifacts born in the conversation, each with its versions.
"""

from __future__ import annotations

from artifacts.services import artifacts_export
from continuity.labels import speaker_label
from conversations.assistant_settings import assistant_settings_get
from conversations.attachments.services import manifests_for
from conversations.models import Conversation, Message, Role
from conversations.transcript.tree import live_branch
from conversations.web.serializers import conversation_repr, message_repr


def _visible_turns(conversation: Conversation) -> list[Message]:
    return [m for m in live_branch(conversation) if m.role in (Role.USER, Role.ASSISTANT)]


def export_markdown(conversation: Conversation) -> str:
    settings_row = assistant_settings_get()
    lines = [f"# {conversation.display_title}", ""]
    turns = _visible_turns(conversation)
    manifests = manifests_for(turns)
    for message in turns:
        label = speaker_label(
            message.role, conversation.persona,
            owner_name=settings_row.owner_name, display_name=settings_row.display_name,
        )
        lines += [label, message.content]
        lines += [f"[Attachment: {attachment.name} ({attachment.mime})]" for attachment in manifests.get(message.id, [])]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def export_json(conversation: Conversation) -> dict:
    branch = live_branch(conversation)
    manifests = manifests_for(branch)
    return {
        "conversation": conversation_repr(conversation),
        "messages": [message_repr(m, manifests.get(m.id, [])) for m in branch],
        "artifacts": artifacts_export(conversation.id),
    }
