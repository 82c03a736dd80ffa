"""Saving the AssistantSettings singleton. The save sends `settings_saved`; its receiver
(`continuity.rules.refresh_triggers`) rebuilds every stored prompt when a setting a prompt reads changed.

Reading it is `elion.base.assistant_settings` (the base layer).
"""

from __future__ import annotations

from continuity.rules.prompt_refresh import refreshes_stale_prompts
from conversations.services.voice.settings import VOICE_FIELDS, VOICE_FLAGS, voice_settings_check
from elion.base.domain_events import settings_saved
from elion.base.errors import InvalidInput
from elion.base.time_zones import time_zone_clean
from elion.models import AssistantSettings, Personality, ReasoningEffort, Verbosity
from memories.services.write_lock import global_write_lock

EDITABLE_FIELDS = (
    "custom_instructions",
    "personality",
    "display_name",
    "owner_name",
    "archive_access",
    "web_search",
    "provider_store_responses",
    "reasoning_effort",
    "verbosity",
    "reasoning_summary_shown",
    "image_generation",
    "memory_suggestions",
    "push_shows_text",
    "time_zone",
    "check_in_proposals",
    *VOICE_FIELDS,
)
# Switches that take only true or false (not "yes", 1 or "on": those are a form's business).
STRICT_FLAGS = ("image_generation", "memory_suggestions", "push_shows_text", "check_in_proposals", *VOICE_FLAGS)
# Settings with a fixed set of values, each checked against its choices.
CHOICES = {"personality": Personality, "reasoning_effort": ReasoningEffort, "verbosity": Verbosity}


@refreshes_stale_prompts
def assistant_settings_update(**changes: object) -> AssistantSettings:
    """Save settings and send `settings_saved` with the settings whose value changed: every stored Elion
    prompt is then marked stale inside the same transaction and rebuilt in batches before this returns
    (seed: settings saves refresh existing prompts; `continuity.rules.prompt_refresh`), unless no changed
    setting is one a prompt reads (`continuity.rules.refresh_triggers.PROMPT_SETTINGS`)."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput(f"Unknown settings: {', '.join(sorted(unknown))}.", code="unknown_setting")
    for name, choices in CHOICES.items():
        if name in changes and changes[name] not in choices.values:
            raise InvalidInput(f"{name} must be one of {', '.join(choices.values)}.", code=f"invalid_{name}")
    for name in STRICT_FLAGS:
        if name in changes and not isinstance(changes[name], bool):
            raise InvalidInput(f"{name} must be true or false.", code=f"invalid_{name}")
    for name in ("display_name", "owner_name"):
        if name in changes and not str(changes[name]).strip():
            raise InvalidInput(f"{name} cannot be empty.", code="invalid_name")
    voice_settings_check(changes)
    if "time_zone" in changes:
        time_zone_clean(changes["time_zone"])
    # Lock order step 1 (see `write_lock.global_write_lock`): a conversation created
    # meanwhile waits, so it cannot store a prompt built from the old settings.
    global_write_lock()
    settings_row = AssistantSettings.objects.select_for_update().get_or_create(pk=1)[0]
    changed = set()
    for name, value in changes.items():
        value = value.strip() if isinstance(value, str) else value
        if getattr(settings_row, name) != value:
            changed.add(name)
        setattr(settings_row, name, value)
    settings_row.save()
    # Only a setting whose value changed can change a prompt: saving the form as it was rebuilds nothing.
    settings_saved.send(sender=AssistantSettings, fields=frozenset(changed))
    return settings_row
