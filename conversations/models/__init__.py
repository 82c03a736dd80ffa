"""The conversations app's own rows: the assistant's settings (a singleton), Character Studio's characters,
and what each billed audio request cost. The transcript's rows (conversations, messages, attachments) are
the `transcript` app's (`transcript.models`, issue 45).

The models live by job (`assistant`, `audio_usage`); this package names every one of them, so
`conversations.models.<Model>` and Django's registry see them all.
"""

from conversations.models.assistant import (
    AssistantSettings,
    BackupSchedule,
    Character,
    Personality,
    ReasoningEffort,
    Verbosity,
)
from conversations.models.audio_usage import AudioCall, AudioUsage

__all__ = [
    "AudioCall",
    "AudioUsage",
    "AssistantSettings",
    "BackupSchedule",
    "Character",
    "Personality",
    "ReasoningEffort",
    "Verbosity",
]
