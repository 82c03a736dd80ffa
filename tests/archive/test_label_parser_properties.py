"""The label parser on arbitrary archive text (pure): any mix of labels, handoff headings, rules and noise.

The existing properties (tests/archive/test_label_parser.py) cover well-formed exports and plain prose;
these cover whatever an upload may hold: parsing never fails, chunks stay within the limit, carry only
text the upload had, and turn numbers and roles are well formed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from archive.services.parsing import CHUNK_MAX_CHARACTERS, chunk_text, speaker_names

_line = st.one_of(
    st.sampled_from([
        "AUMA said:", "Elion Voicefire said:", "Voicefire 5.1 said:", "**ChatGPT:**", "You said:", "User:",
        "### Continued from “Old thread”", "---", "", "   ", "said:", "A very long name with too many words said:",
    ]),
    st.text(max_size=60),
    st.text(alphabet="ab \n", min_size=4_000, max_size=4_500),  # a long line to split
)
_document = st.lists(_line, max_size=40).map("\n".join)


@settings(max_examples=60, deadline=None)
@given(_document)
def test_any_text_parses_into_bounded_chunks_cut_from_its_own_text(text):
    parsed, chunks = chunk_text(text, speaker_names("AUMA", "Elion Voicefire"))
    source_stream = "".join(text.split())
    turns = [c.turn for c in chunks if c.turn is not None]
    assert turns == sorted(turns) and all(t >= 1 for t in turns)
    assert len({c.turn for c in chunks if c.turn is not None}) <= len(parsed.turns)
    for chunk in chunks:
        assert 0 < len(chunk.text) <= CHUNK_MAX_CHARACTERS
        assert chunk.text.strip()
        assert "".join(chunk.text.split()) in source_stream  # a contiguous piece of the text: nothing invented
        assert chunk.role in ("user", "assistant", "")
        assert (chunk.turn is None) == (chunk.speaker == "")


@settings(max_examples=30, deadline=None)
@given(_document)
def test_parsing_is_deterministic(text):
    assert chunk_text(text) == chunk_text(text)
