"""Complete inputs for the stored static prompt's pure builder."""

from __future__ import annotations

from continuity.rules.prompt_policy import (
    PromptCharacter,
    PromptInputs,
    PromptMemory,
    PromptSettings,
)


def settings(**overrides) -> PromptSettings:
    values = dict(
        owner_name="AUMA",
        display_name="Elion Voicefire",
        personality="natural",
        custom_instructions="",
        archive_access=False,
        web_search=False,
    )
    return PromptSettings(**{**values, **overrides})


def full_inputs(**overrides) -> PromptInputs:
    values = dict(
        persona="elion",
        settings=settings(
            custom_instructions="Call me AUMA.", personality="warm", archive_access=True, web_search=True,
            image_generation=True,
        ),
        memories=(PromptMemory("AUMA lives by the sea", "Place", 4), PromptMemory("Loves rain", "Preference", 2)),
        characters=(PromptCharacter("Lumen", "a small fox made of light"),),
        continuity_block="VERBATIM_EXCHANGE_x\nAUMA said:\nhello\nVERBATIM_EXCHANGE_x",
    )
    return PromptInputs(**{**values, **overrides})
