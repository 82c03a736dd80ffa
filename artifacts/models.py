"""Artifacts and their versions, each with its provenance.

- `Artifact`: one standalone piece the model created with `create_artifact`
  in a reply: its title and kind, and where it was born (the conversation,
  the assistant message and the tool call).
- `ArtifactVersion`: the text, one row per `create_artifact` /
  `update_artifact` call, numbered from 1. A version is never changed: an
  update adds the next one. Each records the reply and tool call that wrote it.

The text lives here and in the tool call's stored arguments (a message
part), never in `Message.content`: handoffs, recall, search and the archive,
which read message content, never see it.
"""

from __future__ import annotations

from django.db import models

TITLE_MAX = 200
# A whole artifact fits in one `read_artifact` result (conversations.sending.tool_loop.RESULT_MAX_CHARACTERS).
CONTENT_MAX = 12_000
TOOL_CALL_ID_MAX = 200


class ArtifactKind(models.TextChoices):
    POEM = "poem", "Poem"
    REFLECTION = "reflection", "Reflection"
    LETTER = "letter", "Letter"
    STORY = "story", "Story"
    OTHER = "other", "Other"


class Artifact(models.Model):
    title = models.CharField(max_length=TITLE_MAX)
    kind = models.CharField(max_length=20, choices=ArtifactKind.choices)
    conversation = models.ForeignKey("transcript.Conversation", on_delete=models.CASCADE, related_name="artifacts")
    message = models.ForeignKey("transcript.Message", on_delete=models.CASCADE, related_name="artifacts_created")
    tool_call_id = models.CharField(max_length=TOOL_CALL_ID_MAX)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self) -> str:
        return self.title


class ArtifactVersion(models.Model):
    artifact = models.ForeignKey(Artifact, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    content = models.TextField()
    conversation = models.ForeignKey("transcript.Conversation", on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey("transcript.Message", on_delete=models.CASCADE, related_name="artifact_versions")
    tool_call_id = models.CharField(max_length=TOOL_CALL_ID_MAX)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["artifact_id", "number"]
        constraints = [models.UniqueConstraint(fields=["artifact", "number"], name="artifact_version_number_unique")]

    def __str__(self) -> str:
        return f"{self.artifact_id} v{self.number}"
