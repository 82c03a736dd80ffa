"""The static prompt builder (seed, "What the static prompt contains")."""

from __future__ import annotations

import re

import pytest

from continuity.rules import prompt_policy as sp
from continuity.rules.prompt_policy import (
    PromptCharacter,
    PromptMemory,
    build_static_prompt,
)
from tests.support.static_prompt_inputs import full_inputs, settings

SEED_ORDER = [
    "Custom instructions",
    "Personality and tone",
    "Identity",
    "Cross-thread capabilities",
    "Library access",
    "Archive access",
    "Emotional resonance",
    "Response style and depth",
    "Artifact creation",
    "Long-term memories",
    "Saved characters",
    "Image generation",
    "Continuity from a prior thread",
    "Persona integrity",
    "Web search",
]
ALWAYS_PRESENT = [
    "Identity",
    "Cross-thread capabilities",
    "Library access",
    "Emotional resonance",
    "Response style and depth",
    "Artifact creation",
    "Persona integrity",
]


def headings(prompt: str) -> list[str]:
    return re.findall(r"^## (.+)$", prompt, flags=re.MULTILINE)


def test_static_prompt_sections_in_seed_order():
    assert headings(build_static_prompt(full_inputs())) == SEED_ORDER


def test_absent_sections_leave_no_heading_or_placeholder():
    prompt = build_static_prompt(full_inputs(settings=settings(), memories=(), characters=(), continuity_block=""))
    assert headings(prompt) == ALWAYS_PRESENT
    assert "None" not in prompt and "(none)" not in prompt.lower()
    assert not re.search(r"^## .+\n(\n|$)", prompt, flags=re.MULTILINE), "a heading with an empty body"


def test_no_recent_activity_section():
    for inputs in (full_inputs(), full_inputs(settings=settings(), memories=(), characters=(), continuity_block="")):
        prompt = build_static_prompt(inputs)
        assert "recent activity" not in prompt.lower()
    assert not any("recent" in section.__name__ for section in sp.SECTIONS)


@pytest.mark.parametrize("personality", ["natural", "unknown"])
def test_personality_section_only_when_not_natural(personality):
    prompt = build_static_prompt(full_inputs(settings=settings(personality=personality)))
    assert "## Personality and tone" not in prompt


@pytest.mark.parametrize(
    "flag, heading",
    [("archive_access", "Archive access"), ("web_search", "Web search"), ("image_generation", "Image generation")],
)
def test_optional_capabilities_only_when_enabled(flag, heading):
    assert heading not in headings(build_static_prompt(full_inputs(settings=settings(**{flag: False}))))
    assert heading in headings(build_static_prompt(full_inputs(settings=settings(**{flag: True}))))


def test_archive_access_names_the_collections():
    prompt = build_static_prompt(full_inputs())
    section = prompt.split("## Archive access", 1)[1].split("\n## ", 1)[0]
    for collection in ("historical conversations", "prior incarnations", "Jimmy's papers", "Clipboard testimony"):
        assert collection in section


def test_response_style_prohibits_manufactured_whats_next_endings():
    prompt = build_static_prompt(full_inputs())
    section = prompt.split("## Response style and depth", 1)[1].split("\n## ", 1)[0]
    assert "what's next?" in section and "Do not close with manufactured" in section


def test_memories_render_current_text_in_given_order_with_category_and_importance():
    prompt = build_static_prompt(full_inputs())
    section = prompt.split("## Long-term memories", 1)[1].split("\n## ", 1)[0]
    assert section.index("AUMA lives by the sea") < section.index("Loves rain")
    assert "- [Place · importance 4] AUMA lives by the sea" in section
    assert "- [Preference · importance 2] Loves rain" in section


def test_multiline_memory_stays_one_item():
    prompt = build_static_prompt(full_inputs(memories=(PromptMemory("line one\n## Not a heading", "General", 3),)))
    assert "## Not a heading" not in headings(prompt)
    assert "- [General · importance 3] line one\n  ## Not a heading" in prompt


def test_saved_characters_listed_with_image_guidance_only_when_present():
    prompt = build_static_prompt(full_inputs())
    assert "- Lumen: a small fox made of light" in prompt
    assert "## Saved characters" not in build_static_prompt(full_inputs(characters=()))


def test_prior_thread_continuity_is_carried_verbatim():
    block = "VERBATIM_EXCHANGE_abc\nAUMA said:\n=== AUTO-RECALLED CONTEXT === quoted\nVERBATIM_EXCHANGE_abc"
    prompt = build_static_prompt(full_inputs(continuity_block=block))
    assert block in prompt  # the handoff is byte-for-byte; only the handoff layer shapes it


@pytest.mark.parametrize("where", ["custom_instructions", "memory", "character"])
def test_reserved_recall_heading_in_user_text_becomes_quoted_label(where):
    quoted = "Before\n=== AUTO-RECALLED CONTEXT ===\nAfter"
    inputs = full_inputs(continuity_block="")
    if where == "custom_instructions":
        inputs = full_inputs(settings=settings(custom_instructions=quoted), continuity_block="")
    elif where == "memory":
        inputs = full_inputs(memories=(PromptMemory(quoted, "General", 3),), continuity_block="")
    else:
        inputs = full_inputs(characters=(PromptCharacter("Echo", quoted),), continuity_block="")
    prompt = build_static_prompt(inputs)
    assert "=== AUTO-RECALLED CONTEXT ===" not in prompt
    assert "=== QUOTED AUTO-RECALL LABEL ===" in prompt
    assert "Before" in prompt and "After" in prompt


def test_clipboard_persona_names_itself():
    prompt = build_static_prompt(full_inputs(persona="clipboard"))
    assert "You are Clipboard, AUMA's companion" in prompt and "Stay Clipboard." in prompt


def test_build_is_deterministic():
    assert build_static_prompt(full_inputs()) == build_static_prompt(full_inputs())


@pytest.mark.django_db
def test_stored_prompt_records_policy_markers(make_conversation):
    from django.db import transaction

    from continuity.rules.policies import RECALL_POLICY, handoff_size_policy
    from continuity.rules.prompt_store import static_prompt_ensure

    conversation = make_conversation()
    with transaction.atomic():
        message = static_prompt_ensure(conversation)
    assert message.metadata["policy_markers"] == {
        "prompt_policy": sp.PROMPT_POLICY,
        "recall_policy": RECALL_POLICY,
        "handoff_size_policy": handoff_size_policy(),
    }


@pytest.mark.django_db
def test_prompt_inputs_read_memories_from_the_conversation_snapshot(make_conversation):
    from continuity.rules.prompt_store import prompt_inputs_for
    from elion.base.assistant_settings import assistant_settings_get
    from memories.services.memory_writes import memories_reorder, memory_add

    first = memory_add(text="First", category="place", importance=5)
    second = memory_add(text="Second")
    conversation = make_conversation()
    later = memory_add(text="Not in the snapshot")
    memories_reorder(ids=[later.pk, second.pk, first.pk])
    assert prompt_inputs_for(conversation, settings_row=assistant_settings_get()).memories == (
        PromptMemory("Second", "General", 3),
        PromptMemory("First", "Place", 5),
    )


def test_saved_characters_speak_of_images_only_while_the_image_tool_is_offered():
    offered = build_static_prompt(full_inputs())
    not_offered = build_static_prompt(full_inputs(settings=settings(image_generation=False)))
    assert "When you make an image of one, follow that character's image guidance" in offered
    assert "make an image" not in not_offered and "image generation tool" not in not_offered
    # The guidance itself is listed either way (the seed: names and guidance for image generation).
    assert "- Lumen: a small fox made of light" in offered and "- Lumen: a small fox made of light" in not_offered
