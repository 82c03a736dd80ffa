"""The assistant's settings (a singleton), its choices, and Character Studio's characters.

The conversations app's rows until issue 45: the tables keep their `conversations_*` names (`db_table`)."""

from __future__ import annotations

from django.db import models


class Personality(models.TextChoices):
    NATURAL = "natural", "Natural"
    WARM = "warm", "Warm"
    PLAYFUL = "playful", "Playful"
    CONCISE = "concise", "Concise"
    REFLECTIVE = "reflective", "Reflective"


class ReasoningEffort(models.TextChoices):
    MINIMAL = "minimal", "Minimal"
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class Verbosity(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class BackupSchedule(models.TextChoices):
    OFF = "off", "Off"
    DAILY = "daily", "Daily"
    WEEKLY = "weekly", "Weekly"


class AssistantSettings(models.Model):
    """Singleton (pk=1) holding the owner's settings for the assistant."""

    owner_name = models.CharField(max_length=100, default="AUMA")
    display_name = models.CharField(max_length=100, default="Elion Voicefire")
    personality = models.CharField(max_length=20, choices=Personality.choices, default=Personality.NATURAL)
    custom_instructions = models.TextField(blank=True, default="")
    archive_access = models.BooleanField(default=False)
    web_search = models.BooleanField(default=False)
    # Responses API `store`: off, so the provider keeps no response of these conversations.
    provider_store_responses = models.BooleanField(default=False)
    # Responses API `reasoning.effort`, `text.verbosity`, and whether to ask for (and show) reasoning summaries.
    reasoning_effort = models.CharField(max_length=10, choices=ReasoningEffort.choices, default=ReasoningEffort.MEDIUM)
    verbosity = models.CharField(max_length=10, choices=Verbosity.choices, default=Verbosity.MEDIUM)
    reasoning_summary_shown = models.BooleanField(default=True)
    # Image generation (off by default): the built-in `image_generation` tool on `responses`,
    # the app's `generate_image` tool (the Images API) on `chat.completions`.
    image_generation = models.BooleanField(default=False)
    # "Elion may suggest memories": the `propose_memory` tool is offered (issue 35); it saves nothing by itself.
    memory_suggestions = models.BooleanField(default=True)
    # Voice (issue 43, docs/voice.md): the speech voice (a name the installed SDK lists), "how Elion
    # sounds" (`instructions` of every speech request), replies read aloud as they arrive, recordings kept
    # as attachments of their turn, and the language passed to transcription (ISO-639-1; blank: detected).
    voice = models.CharField(max_length=40, default="marin")
    voice_instructions = models.TextField(blank=True, default="")
    read_aloud_auto = models.BooleanField(default=False)
    keep_voice_recordings = models.BooleanField(default=False)
    voice_language = models.CharField(max_length=8, blank=True, default="")
    # Backups that run themselves (issue 42, `operations.backup.scheduling`): how often, at which hour of the
    # server's time zone, and how many of each period the retention policy keeps (only verified ones are pruned).
    backup_schedule = models.CharField(max_length=10, choices=BackupSchedule.choices, default=BackupSchedule.DAILY)
    backup_hour = models.PositiveSmallIntegerField(default=3)
    backup_keep_daily = models.PositiveSmallIntegerField(default=7)
    backup_keep_weekly = models.PositiveSmallIntegerField(default=4)
    backup_keep_monthly = models.PositiveSmallIntegerField(default=12)
    # Web Push (issue 44, docs/push.md): off, a notification says only that Elion wrote (lock-screen privacy);
    # on, it also carries the start of the reply's text.
    push_shows_text = models.BooleanField(default=False)
    # Check-ins (issue 44, docs/check_ins.md): the owner's IANA time zone, a new check-in's default zone; and
    # "Elion may propose check-ins" (the `propose_check_in` tool is offered, as `memory_suggestions` does).
    time_zone = models.CharField(max_length=64, default="UTC")
    check_in_proposals = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "conversations_assistantsettings"
        verbose_name = "assistant settings"
        verbose_name_plural = "assistant settings"

    def __str__(self) -> str:
        return f"Settings for {self.display_name}"


class Character(models.Model):
    """A Character Studio character: listed in every stored prompt's saved-characters
    section and pinnable for one message as dynamic context."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    image_guidance = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "conversations_character"
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name
