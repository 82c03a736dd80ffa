"""The handoff travels as data: a built prompt records where its prior-thread section stands, the stored
prompt keeps that span, and a send reads its handoff from the span (request size details), never by
reading the prompt's text back (seed: "Request size details" count the handoff inside the static prompt)."""

from __future__ import annotations

import pytest

from continuity.rules.prompt_policy import (
    HANDOFF_SPAN_KEY,
    PRIOR_THREAD_HEADING,
    handoff_text_of,
    section_prior_thread_continuity,
)
from continuity.rules.prompt_store import (
    prompt_is_current,
    static_prompt_built,
    static_prompt_ensure,
    static_prompts_rebuild,
)
from tests.support.prompt_sections import prior_thread_section_in
from tests.support.static_prompt_inputs import full_inputs
from transcript.models import Message, Role


def test_handoff_span_marks_the_prior_thread_section_of_the_built_prompt():
    inputs = full_inputs()
    built = static_prompt_built(inputs)
    start, end = built.handoff_span
    assert built.text[start:end] == section_prior_thread_continuity(inputs)
    assert built.text[start:end].startswith(PRIOR_THREAD_HEADING)


def test_handoff_span_is_empty_without_a_handoff():
    built = static_prompt_built(full_inputs(continuity_block=""))
    assert built.handoff_span == (0, 0)
    assert handoff_text_of(built.text, {HANDOFF_SPAN_KEY: list(built.handoff_span)}) == ""


def test_handoff_text_of_a_prompt_without_a_recorded_span_is_empty():
    assert handoff_text_of("## Continuity from a prior thread\nBEGIN VERBATIM_EXCHANGE_x", {}) == ""
    assert handoff_text_of("text", {HANDOFF_SPAN_KEY: "0:4"}) == ""


def test_the_span_finds_what_reading_the_text_back_found():
    inputs = full_inputs(continuity_block="BEGIN VERBATIM_EXCHANGE_x\nAUMA said:\nhello\nEND VERBATIM_EXCHANGE_x")
    built = static_prompt_built(inputs)
    assert handoff_text_of(built.text, {HANDOFF_SPAN_KEY: list(built.handoff_span)}) == prior_thread_section_in(
        built.text
    )


@pytest.mark.django_db
def test_stored_prompt_records_its_handoff_span(make_conversation):
    conversation = make_conversation(persona="elion")
    prompt = static_prompt_ensure(conversation)
    assert prompt.metadata[HANDOFF_SPAN_KEY] == [0, 0]
    assert prompt_is_current(prompt, conversation)


@pytest.mark.django_db
def test_a_stored_prompt_without_a_span_is_not_current_and_the_rebuild_records_one(make_conversation):
    conversation = make_conversation(persona="elion")
    prompt = static_prompt_ensure(conversation)
    metadata = {key: value for key, value in prompt.metadata.items() if key != HANDOFF_SPAN_KEY}
    Message.objects.filter(pk=prompt.pk).update(metadata=metadata)
    prompt.refresh_from_db()
    assert not prompt_is_current(prompt, conversation)
    assert static_prompts_rebuild([conversation]) == 1
    rebuilt = Message.objects.get(conversation=conversation, role=Role.SYSTEM)
    assert rebuilt.metadata[HANDOFF_SPAN_KEY] == [0, 0] and prompt_is_current(rebuilt, conversation)
