"""The memory import reads Claude.ai's memories.json: one memory per paragraph, under its heading."""

from __future__ import annotations

import json

import pytest

from elion.base.errors import InvalidInput
from memories.models import MEMORY_TEXT_MAX
from memories.services.importing import claude_memories_shaped, claude_memory_texts, memories_parse
from memories.services.memory_writes import MemoryDraft


def test_each_paragraph_is_a_memory_under_the_heading_above_it():
    text = (
        "Opening line with no heading.\n\n## Work\n\nKeeps a journal.\n\nWrites at dawn.\n\n"
        "__Home__\n\nLives by the sea.\r\n\r\n**Likes:**\n\n- lanterns\n- dusk\n\n**Trailing heading**\n"
    )
    assert claude_memory_texts(text) == [
        "Opening line with no heading.",
        "Work: Keeps a journal.",
        "Work: Writes at dawn.",
        "Home: Lives by the sea.",
        "Likes:\n- lanterns\n- dusk",
    ]


def test_a_paragraph_longer_than_a_memory_is_cut_at_a_space():
    words = "tide " * (MEMORY_TEXT_MAX // 2)
    pieces = claude_memory_texts(words)
    assert len(pieces) == 3 and all(len(p) <= MEMORY_TEXT_MAX for p in pieces)
    assert " ".join(pieces).split() == words.split()


def test_memories_json_parses_in_the_preview_with_projects_as_a_list_or_an_object():
    as_object = [{"conversations_memory": "Likes tea.", "project_memories": {"p1": "Garden: lavender."}}]
    as_list = [{"project_memories": ["Garden: lavender.", 7, None]}, {"conversations_memory": None}]
    assert memories_parse(text=json.dumps(as_object)) == [
        MemoryDraft("Likes tea."), MemoryDraft("Garden: lavender.", "project"),
    ]
    assert memories_parse(text=json.dumps(as_list)) == [MemoryDraft("Garden: lavender.", "project")]


def test_only_claudes_shape_is_read_as_claudes():
    assert claude_memories_shaped([{"conversations_memory": "x", "account_uuid": "a"}])
    assert not claude_memories_shaped([{"text": "x", "conversations_memory": "y"}])
    assert not claude_memories_shaped([{"conversations_memory": "x"}, "plain"])
    assert not claude_memories_shaped({"conversations_memory": "x"})
    with pytest.raises(InvalidInput) as raised:
        memories_parse(text=json.dumps([{"conversations_memory": "   "}]))
    assert raised.value.code == "empty_import"
