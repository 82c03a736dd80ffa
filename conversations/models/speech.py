"""A reply's speech (issue 43, Read aloud): each spoken segment of a reply kept as a content-addressed blob."""

from __future__ import annotations

from django.db import models

from conversations.models.messages import Message
from conversations.models.threads import Conversation


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
        constraints = [models.UniqueConstraint(fields=["message", "key"], name="message_speech_key_unique")]
        indexes = [models.Index(fields=["conversation", "sha256"], name="message_speech_blob")]

    def __str__(self) -> str:
        return f"speech {self.key[:12]} of {self.message_id}"


class AudioCall(models.TextChoices):
    TRANSCRIPTION = "transcription"
    SPEECH = "speech"


class AudioUsage(models.Model):
    """One billed audio request to the provider (issue 43): a transcription or a piece of speech, with
    what the provider reported for it and what Elion measured (`operations.audio_usage` prices it).

    Written only when the provider made something: a segment replayed from its stored blob, the kept
    voice preview and the offline demo cost nothing and write no row. No conversation is named: the row
    is what was billed, and outlives the conversation (a deleted conversation's text usage goes with
    its replies; its audio usage stays, a count without words).

    - `reported`: how the provider reported the call: `tokens` (the gpt-4o transcribe models' `usage`),
      `duration` (whisper-1's seconds) or `none` (speech: `audio.speech.create` answers bytes only).
    - `seconds`: the audio's length: the provider's duration, else the recording's or the made WAV's.
    - token counts: as the provider reported them; `characters`: the speech input sent.
    """

    kind = models.CharField(max_length=16, choices=AudioCall.choices)
    model = models.CharField(max_length=100)
    reported = models.CharField(max_length=16, default="none")
    seconds = models.FloatField(null=True)
    input_tokens = models.PositiveIntegerField(null=True)
    input_audio_tokens = models.PositiveIntegerField(null=True)
    input_text_tokens = models.PositiveIntegerField(null=True)
    output_tokens = models.PositiveIntegerField(null=True)
    characters = models.PositiveIntegerField(null=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.kind} on {self.model} at {self.created_at:%Y-%m-%d %H:%M}"
