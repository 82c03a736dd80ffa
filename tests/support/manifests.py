"""A message sent with attachments, for the manifest tests."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from tests.support.fork import finish_reply
from transcript.attachments.upload import attachment_upload
from transcript.models import Attachment, Conversation


def sent_with(conversation: Conversation, *files: tuple[str, bytes], content: str = "see") -> list[Attachment]:
    attachments = [attachment_upload(upload=SimpleUploadedFile(name, data)) for name, data in files]
    send_prepare(SendCommand(conversation_id=conversation.id, content=content,
                             attachment_ids=tuple(a.id for a in attachments)))
    finish_reply(conversation)
    return attachments
