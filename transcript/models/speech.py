"""A reply's speech (issue 43, Read aloud): each spoken segment of a reply kept as a content-addressed blob."""

from __future__ import annotations

from django.db import models

from transcript.models.messages import Message
from transcript.models.threads import Conversation


class MessageSpeech(models.Model):
    """One segment of a reply's speech, as the provider (or the offline demo) made it.

    `key` is the sha256 of everything the audio depends on: the segment's text (prepared for speech),
    the voice, the speech model, the owner's "how Elion sounds" instructions and the audio format
    (`conversations.services.voice.speech`). The same reply read again with the same settings finds
    its row and replays the stored blob with no provider request, after a restart too; a change of any
    of them is another key. The bytes are a blob named by their sha256 in the conversation's own store
    (`transcript.attachments.store`), so a deleted conversation's directory takes them along; a deleted
    message takes its rows (CASCADE), and the garbage collector then removes the blobs no row or manifest
    names (`transcript.attachments.gc`).
    """

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="speech", db_index=False)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="speech")
    key = models.CharField(max_length=64)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    mime = models.CharField(max_length=40)
    voice = models.CharField(max_length=40)
    model = models.CharField(max_length=100)
    # The offline demo's speech (espeak-ng or a tone), labelled as such.
    demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "conversations_messagespeech"
        constraints = [models.UniqueConstraint(fields=["message", "key"], name="message_speech_key_unique")]
        indexes = [models.Index(fields=["conversation", "sha256"], name="message_speech_blob")]

    def __str__(self) -> str:
        return f"speech {self.key[:12]} of {self.message_id}"
