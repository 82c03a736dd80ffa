"""The elion app's rows, by job:

- `assistant`: the owner's settings for the assistant (a singleton), its choices, and Character Studio's
  characters; `audio_usage`: what each billed audio request cost. The owner's rows, in every backup; the
  conversations app's until issue 45 (same tables, `conversations_*`).
- `instance`: failed owner logins, the records of backups and restores, Web Push subscriptions. They describe
  this installation, and no backup holds them.

This package names every model, so `elion.models.<Model>` and Django's registry see them all.
"""

from elion.models.assistant import (
    AssistantSettings,
    BackupSchedule,
    Character,
    Personality,
    ReasoningEffort,
    Verbosity,
)
from elion.models.audio_usage import AudioCall, AudioUsage
from elion.models.instance import (
    BackupRecord,
    BackupStatus,
    LoginFailure,
    PushSubscription,
    RestoreRun,
    RestoreStatus,
)

__all__ = [
    "AssistantSettings",
    "AudioCall",
    "AudioUsage",
    "BackupRecord",
    "BackupSchedule",
    "BackupStatus",
    "Character",
    "LoginFailure",
    "Personality",
    "PushSubscription",
    "ReasoningEffort",
    "RestoreRun",
    "RestoreStatus",
    "Verbosity",
]
