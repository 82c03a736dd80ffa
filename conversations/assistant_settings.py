"""Reading the AssistantSettings singleton (names, personality, tool switches).

The read every layer needs; saving settings is a service
(`conversations.settings_service`), because a save rebuilds stored prompts.
Imports models only.
"""

from __future__ import annotations

from conversations.models import AssistantSettings


def assistant_settings_get() -> AssistantSettings:
    settings_row, _ = AssistantSettings.objects.get_or_create(pk=1)
    return settings_row
