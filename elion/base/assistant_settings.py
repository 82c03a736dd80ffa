"""Reading the AssistantSettings singleton (names, personality, tool switches).

The read every layer needs; saving settings is a service
(`conversations.services.settings_writes`), because a save rebuilds stored prompts.
Imports models only.
"""

from __future__ import annotations

from elion.models import AssistantSettings


def assistant_settings_get() -> AssistantSettings:
    """The settings row, created with its defaults on first use."""
    settings_row, _ = AssistantSettings.objects.get_or_create(pk=1)
    return settings_row


def assistant_settings_read() -> AssistantSettings:
    """The settings row, or its defaults unsaved: for paths that only read (New Chat capture)."""
    return AssistantSettings.objects.filter(pk=1).first() or AssistantSettings()
