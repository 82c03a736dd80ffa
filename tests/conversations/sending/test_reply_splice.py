"""The splice of stored text and live deltas (`reply_watch.StreamSplice`), a pure core.

Whatever the stored prefix, the client's Last-Event-ID, the deltas the
watcher missed before subscribing and the order they are offered in, the
client receives exactly the reply's text after what it had: no gap, no
duplicate, and `seq` only grows.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conversations.sending.watch import StreamSplice, parse_after_seq
from elion.base.errors import InvalidInput


def seqs(deltas: list[str]) -> list[int]:
    total, out = 0, []
    for text in deltas:
        total += len(text)
        out.append(total)
    return out


def received(pieces: list[tuple[str, int]]) -> str:
    return "".join(text for text, _ in pieces)


def assert_increasing(pieces: list[tuple[str, int]]) -> None:
    ends = [seq for _, seq in pieces]
    assert ends == sorted(set(ends))


@st.composite
def watch_scenarios(draw):
    deltas = draw(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=12))
    ends = seqs(deltas)
    # The client had the reply up to some delta boundary (its Last-Event-ID).
    had = draw(st.sampled_from([0, *ends]))
    # Stored text: a whole-delta prefix. Live: every delta from some point on,
    # possibly starting before the stored prefix ends (emitted after subscribing).
    stored_upto = draw(st.integers(min_value=0, max_value=len(deltas)))
    live_from = draw(st.integers(min_value=0, max_value=stored_upto))
    return deltas, had, stored_upto, live_from


@given(watch_scenarios())
def test_splice_of_stored_text_and_live_deltas_has_no_gap_and_no_duplicate(scenario):
    deltas, had, stored_upto, live_from = scenario
    text, ends = "".join(deltas), seqs(deltas)
    splice = StreamSplice(had)
    pieces = splice.stored("".join(deltas[:stored_upto]))
    for index in range(live_from, len(deltas)):
        pieces += splice.live(deltas[index], ends[index])
    assert received(pieces) == text[had:]
    assert_increasing(pieces)
    assert not splice.gapped


@given(watch_scenarios(), st.data())
def test_a_missed_live_delta_waits_for_the_stored_text_then_nothing_is_lost(scenario, data):
    deltas, had, _, _ = scenario
    text, ends = "".join(deltas), seqs(deltas)
    lost = data.draw(st.sets(st.integers(min_value=0, max_value=len(deltas) - 1)))
    splice = StreamSplice(had)
    pieces = splice.stored("")
    for index in range(len(deltas)):
        if index not in lost:
            pieces += splice.live(deltas[index], ends[index])
    assert text[had:].startswith(received(pieces))
    # The run stores the whole text before it says `done`; the splice then completes it.
    pieces += splice.stored(text)
    assert received(pieces) == text[had:]
    assert_increasing(pieces)


def test_a_live_delta_already_in_the_stored_text_is_dropped():
    splice = StreamSplice(0)
    assert splice.stored("Hello, wor") == [("Hello, wor", 10)]
    assert splice.live("wor", 10) == []
    assert splice.live("ld", 12) == [("ld", 12)]


@pytest.mark.parametrize("bad", ["-1", "abc", "1.5", True])
def test_last_event_id_must_be_a_whole_number_of_characters(bad):
    assert parse_after_seq(None) == 0 and parse_after_seq("") == 0 and parse_after_seq(" 42 ") == 42
    with pytest.raises(InvalidInput) as caught:
        parse_after_seq(bad)
    assert caught.value.code == "invalid_last_event_id"
