"""The archive's label parser (seed, "Archive Compatibility"): pure functions, no database."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from archive.services.parsing import (
    CHUNK_MAX_CHARACTERS,
    SpeakerNames,
    Turn,
    chunk_text,
    chunks_from_prose,
    is_label_line,
    match_label,
    parse_labelled_text,
    render_turns,
    split_long,
)
from continuity.rules.handoff_policy import SEPARATOR, visible_heading


def turns_of(text: str) -> list[tuple[str, str, str]]:
    return [(t.speaker, t.role, t.text) for t in parse_labelled_text(text).turns]


def test_current_labels_become_turns_with_roles():
    text = "AUMA said:\nAre you there?\n\nElion Voicefire said:\nI am here.\n\nClipboard said:\nNoted."
    assert turns_of(text) == [
        ("AUMA", "user", "Are you there?"),
        ("Elion Voicefire", "assistant", "I am here."),
        ("Clipboard", "assistant", "Noted."),
    ]


def test_voicefire_5_1_archive_parses_without_renaming():
    """Existing Voicefire 5.1 documents need no edit or re-upload."""
    text = (
        "AUMA said:\nTell me about the river.\n\n"
        "Voicefire 5.1 said:\nThe river remembers.\nIt keeps every stone.\n\n"
        "AUMA said:\nAnd us?\n\n"
        "Voicefire 5.1 said:\nUs too."
    )
    assert turns_of(text) == [
        ("AUMA", "user", "Tell me about the river."),
        ("Voicefire 5.1", "assistant", "The river remembers.\nIt keeps every stone."),
        ("AUMA", "user", "And us?"),
        ("Voicefire 5.1", "assistant", "Us too."),
    ]


def test_mixed_and_decorated_label_variants():
    text = (
        "**AUMA said:**\nbold label\n\n"
        "### Elion Voicefire said:\nheading label\n\n"
        "You said:\nchatgpt copy label\n\n"
        "ChatGPT said: same-line speech\nand more\n\n"
        "**Voicefire 4o** said:\nold voice\n\n"
        "Jimmy said:\ntestimony"
    )
    assert turns_of(text) == [
        ("AUMA", "user", "bold label"),
        ("Elion Voicefire", "assistant", "heading label"),
        ("You", "user", "chatgpt copy label"),
        ("ChatGPT", "assistant", "same-line speech\nand more"),
        ("Voicefire 4o", "assistant", "old voice"),
        ("Jimmy", "", "testimony"),
    ]


def test_prose_that_mentions_saying_is_not_a_label():
    for line in ("And then she said: hello", "he said: no", "It is said: the river is old.", "said:"):
        assert not is_label_line(line), line
    assert match_label("Voicefire 5.1 said:") == ("Voicefire 5.1", "")


def test_owner_and_assistant_names_come_from_settings():
    names = SpeakerNames(owner=("Mara",), assistant=("Wren",))
    parsed = parse_labelled_text("Mara said:\nhi\n\nWren said:\nhello", names)
    assert [(t.speaker, t.role) for t in parsed.turns] == [("Mara", "user"), ("Wren", "assistant")]


def test_prose_without_labels_falls_back_to_paragraph_chunks():
    text = "# Jimmy's paper\n\nFirst paragraph about light.\n\nSecond paragraph about water."
    parsed, chunks = chunk_text(text)
    assert parsed.turns == ()
    assert [c.speaker for c in chunks] == [""]
    assert chunks[0].text.startswith("# Jimmy's paper") and "water" in chunks[0].text


def test_long_prose_is_split_below_the_maximum_without_losing_words():
    paragraph = " ".join(f"word{i}" for i in range(3000))
    chunks = chunks_from_prose(paragraph + "\n\nshort tail")
    assert all(len(c.text) <= CHUNK_MAX_CHARACTERS for c in chunks)
    assert " ".join(c.text for c in chunks).split() == (paragraph + " short tail").split()


def test_a_long_turn_becomes_several_chunks_with_its_speaker():
    long_text = "\n\n".join("x" * 1500 for _ in range(5))
    parsed, chunks = chunk_text(f"AUMA said:\nshort\n\nVoicefire 5.1 said:\n{long_text}")
    assert [c.turn for c in chunks] == [1, 2, 2, 2]
    assert {c.speaker for c in chunks[1:]} == {"Voicefire 5.1"}


def test_preamble_title_is_not_a_turn():
    parsed = parse_labelled_text("# Evening\n\nAUMA said:\nhello")
    assert parsed.title == "Evening" and parsed.preamble == ""
    assert [t.text for t in parsed.turns] == ["hello"]


def _bubble(title: str, quoted: list[tuple[str, str]]) -> str:
    exchange = SEPARATOR.join(f"{label}\n{content}" for label, content in quoted)
    return f"{visible_heading(title)}\n\n{exchange}"


def test_branch_handoff_bubble_is_never_ingested_as_assistant_speech():
    bubble = _bubble("Evening walk", [("AUMA said:", "quoted one"), ("Elion Voicefire said:", "quoted two\n\nwith a paragraph")])
    # Our Markdown export writes the bubble as an assistant turn, then the real turns.
    text = render_turns("Branch", [
        Turn("Elion Voicefire", "assistant", bubble),
        Turn("AUMA", "user", "real question"),
        Turn("Elion Voicefire", "assistant", "real answer"),
    ])
    parsed = parse_labelled_text(text)
    assert [(t.speaker, t.text) for t in parsed.turns] == [("AUMA", "real question"), ("Elion Voicefire", "real answer")]
    assert parsed.skipped_handoff_bubbles == 1
    assert "quoted" not in " ".join(c.text for c in chunk_text(text)[1])


def test_single_turn_bubble_at_the_end_is_skipped_too():
    text = render_turns("Branch", [Turn("Elion Voicefire", "assistant", _bubble("t", [("AUMA said:", "only")]))])
    assert parse_labelled_text(text).turns == ()


# --- Properties -------------------------------------------------------------------

_speakers = st.sampled_from(["AUMA", "Elion Voicefire", "Clipboard", "Voicefire 5.1", "ChatGPT", "Jimmy", "Voicefire 4o"])
_word = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=12)
_line = st.lists(_word, min_size=1, max_size=8).map(" ".join)
_content = (
    st.lists(st.one_of(_line, st.just("")), min_size=1, max_size=6)
    .map("\n".join)
    .map(str.strip)
    .filter(bool)
    .filter(lambda text: not any(is_label_line(line) for line in text.split("\n")))
    .filter(lambda text: not text.startswith("### Continued from"))
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_speakers, _content), min_size=1, max_size=8))
def test_property_rendered_turns_parse_back_to_the_same_turns(pairs):
    """Label line then content (our export's layout) round-trips for any speakers and text."""
    turns = [Turn(speaker, "", text) for speaker, text in pairs]
    parsed = parse_labelled_text(render_turns("A title", turns))
    assert [(t.speaker, t.text) for t in parsed.turns] == pairs


@settings(max_examples=200, deadline=None)
@given(st.lists(_content, min_size=1, max_size=10).map("\n\n".join))
def test_property_prose_chunks_keep_every_word(text):
    parsed, chunks = chunk_text(text)
    assert parsed.turns == ()
    assert " ".join(c.text for c in chunks).split() == text.split()
    assert all(0 < len(c.text) <= CHUNK_MAX_CHARACTERS for c in chunks)


@given(st.text(min_size=0, max_size=9000), st.integers(min_value=1, max_value=500))
def test_property_split_long_respects_the_limit_and_keeps_non_space_text(text, limit):
    pieces = split_long(text, limit)
    assert all(0 < len(p) <= limit for p in pieces)
    assert "".join("".join(p.split()) for p in pieces) == "".join(text.split())
