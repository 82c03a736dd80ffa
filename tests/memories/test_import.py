"""Parsing bulk imports: JSON or CSV, every problem reported with its line."""

from __future__ import annotations

import pytest

from elion.base.errors import InvalidInput
from memories.services.importing import memories_parse
from memories.services.memory_writes import MemoryDraft


def test_json_strings_and_objects():
    drafts = memories_parse(text='{"memories": ["Plain", {"text": "Rich", "category": "Sacred", "importance": "5"}]}')
    assert drafts == [MemoryDraft("Plain"), MemoryDraft("Rich", "sacred", 5)]


def test_csv_with_header_in_any_column_order_and_bom():
    text = "\ufeffimportance,text,category\n2,\"Quoted, with comma\",place\n\n4,\"Two\nlines\",event\n"
    assert memories_parse(text=text, fmt="csv") == [
        MemoryDraft("Quoted, with comma", "place", 2),
        MemoryDraft("Two\nlines", "event", 4),
    ]


def test_csv_without_header_reads_text_category_importance():
    assert memories_parse(text="Just text\nWith category,identity\nAll three,event,1\n") == [
        MemoryDraft("Just text"),
        MemoryDraft("With category", "identity"),
        MemoryDraft("All three", "event", 1),
    ]


@pytest.mark.parametrize(
    "text, fmt, where",
    [
        ('[\n  "ok",\n  "missing quote\n]', "json", "Line 3"),
        ("[1, 2]", "json", "Memory 1"),
        ('["ok", {"text": "x", "mood": "sad"}]', "json", "Memory 2"),
        ("ok\n\"unclosed,general,3\n", "csv", "Line"),
        ("fine,general,3\nbad,unknown,3\n", "csv", "Line 2"),
        ("fine,general,3\n,general,3\n", "csv", "Line 2"),
        ("a,general,3,extra\n", "csv", "Line 1"),
        ("text,mood\nx,sad\n", "csv", "Line 1"),
    ],
)
def test_parse_errors_name_the_place(text, fmt, where):
    with pytest.raises(InvalidInput) as raised:
        memories_parse(text=text, fmt=fmt)
    assert raised.value.detail.startswith(where), raised.value.detail
    assert "Nothing was imported." in raised.value.detail


def test_empty_and_unknown_format_are_rejected():
    for text, fmt in (("", None), ("   ", None), ("[]", "json"), ("x", "xml")):
        with pytest.raises(InvalidInput):
            memories_parse(text=text, fmt=fmt)
