"""What each billed audio request to the provider cost (issue 43): not a row of any conversation."""

from __future__ import annotations

from django.db import models


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

    class Meta:
        db_table = "conversations_audiousage"

    def __str__(self) -> str:
        return f"{self.kind} on {self.model} at {self.created_at:%Y-%m-%d %H:%M}"
