"""The trim step (`ELION_TRIM_STEP`): a prompt cache that survives trimming, on the pure trimming function.

Seed "What Travels in Conversation History": the saved history "remains available until the configured
input budget requires trimming". What a trim then cuts is the app's choice: with a step it cuts back to a
point fixed by the rows, so the next sends carry the same prefix until the budget is reached again.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from continuity.rules.request_policy import HistoryTurn, assemble_request, trim_history, turn_tokens
from elion.base import env


def earlier_trim_history(turns: list[HistoryTurn], budget_tokens: int) -> tuple[list[HistoryTurn], int]:
    """The trimming before the step existed, as it was: drop the oldest until the rest fits, never open on a reply."""
    total = sum(turn_tokens(turn) for turn in turns)
    first, last = 0, len(turns) - 1
    while first < last and total > budget_tokens:
        total -= turn_tokens(turns[first])
        first += 1
    while first < last and turns[first].role == "assistant":
        total -= turn_tokens(turns[first])
        first += 1
    return list(turns[first:]), first


def tokens(turns: list[HistoryTurn]) -> int:
    return sum(turn_tokens(turn) for turn in turns)


turn = st.builds(
    HistoryTurn,
    role=st.sampled_from(["user", "assistant", "assistant"]),
    content=st.text(alphabet="abcdefgh ", min_size=1, max_size=400),
)
budgets = st.integers(min_value=40, max_value=3_000)
shares = st.sampled_from([0, 0.01, 0.05, 0.1, 0.15, 0.2, 0.25])


def user_ends(turns: list[HistoryTurn]) -> list[int]:
    """Where a request's history may end: after each user turn (the message being answered)."""
    return [at + 1 for at, t in enumerate(turns) if t.role == "user"]


@settings(max_examples=400, deadline=None)
@given(st.lists(turn, min_size=1, max_size=40), budgets)
def test_step_zero_keeps_the_earlier_minimal_trimming(turns, budget):
    assert trim_history(turns, budget, 0) == earlier_trim_history(turns, budget)


@settings(max_examples=400, deadline=None)
@given(st.lists(turn, min_size=1, max_size=40), budgets, shares)
def test_trim_step_same_rows_give_the_same_request_as_long_as_no_trim_is_due(turns, budget, share):
    """Any step: as the thread grows, the history starts where it started until the turns from there no
    longer fit; and the same rows always give the same request."""
    step = int(budget * share)
    ends = user_ends(turns)
    assume(len(ends) >= 2)
    previous_start = None
    for end in ends:
        grown = turns[:end]
        _, start = trim_history(grown, budget, step)
        request = assemble_request(static_prompt="S", history=grown, input_budget_tokens=budget + 1,
                                   trim_step_tokens=step)
        again = assemble_request(static_prompt="S", history=list(grown), input_budget_tokens=budget + 1,
                                 trim_step_tokens=step)
        assert request == again
        if previous_start is not None and tokens(grown[previous_start:]) <= budget:
            assert start == previous_start  # no trim is due: the same prefix
        if previous_start is not None:
            assert start >= previous_start  # the view only moves forward as the thread grows
        previous_start = start


@settings(max_examples=400, deadline=None)
@given(st.lists(turn, min_size=1, max_size=40), budgets, shares)
def test_a_trim_never_leaves_less_than_budget_minus_step(turns, budget, share):
    """Kept history: within the budget whenever today's trimming fits it, and never below budget - step
    (unless today's minimal trimming keeps less itself, past a turn longer than the step)."""
    step = int(budget * share)
    kept, dropped = trim_history(turns, budget, step)
    minimal, minimal_dropped = trim_history(turns, budget, 0)
    assert kept == turns[dropped:] and kept[-1] == turns[-1]
    assert dropped >= minimal_dropped  # a step only ever cuts further back than just enough
    if len(kept) > 1:
        assert kept[0].role != "assistant"
    if tokens(minimal) <= budget:
        assert tokens(kept) <= budget
    assert tokens(kept) >= min(tokens(minimal), budget - step)


@settings(max_examples=300, deadline=None)
@given(st.lists(turn, min_size=1, max_size=30), budgets, shares)
def test_the_saved_history_is_carried_up_to_the_configured_input_budget(turns, budget, share):
    """Seed: nothing is trimmed unless the budget requires it, whatever the step."""
    assume(turns[0].role == "user" and tokens(turns) <= budget)
    kept, dropped = trim_history(turns, budget, int(budget * share))
    assert dropped == 0 and kept == turns


def test_a_trim_cuts_back_by_the_step_and_the_next_sends_extend_that_prefix():
    """Turns of 100 tokens against a 1,000-token history budget and a 600-token step: step 0 starts the
    history one pair later on every send past the budget; with the step the cut falls only on the chain
    (the first user turn past each 300-token line of the stored measure: turns 0, 4, 6, 10, 12, 16, …), so
    a trim cuts back one or two pairs and the next send carries the same first turn."""
    def pair(n: int) -> list[HistoryTurn]:
        return [HistoryTurn("user", f"q{n:03d}" + "x" * 396), HistoryTurn("assistant", f"a{n:03d}" + "y" * 396)]

    thread: list[HistoryTurn] = []
    for n in range(20):
        thread += pair(n)
    histories = [thread[: 2 * n + 1] for n in range(20)]  # each request answers its last user turn
    minimal = [trim_history(history, 1_000, 0)[1] for history in histories]
    stepped = [trim_history(history, 1_000, 600)[1] for history in histories]
    assert minimal == [0] * 5 + [2 * n - 8 for n in range(5, 20)]
    assert stepped == [0] * 5 + [4, 4, 6, 10, 10, 12, 16, 16, 18, 22, 22, 24, 28, 28, 30]
    for start, history in zip(stepped[5:], histories[5:], strict=True):
        assert 400 <= tokens(history[start:]) <= 1_000


@pytest.mark.parametrize("raw", ["0.3", "26%", "-0.1", "a tenth", "NaN"])
def test_trim_step_setting_outside_0_to_25_percent_stops_the_app(monkeypatch, raw):
    monkeypatch.setenv("ELION_TRIM_STEP", raw)
    with pytest.raises(env.ConfigurationError, match="ELION_TRIM_STEP"):
        env.share("ELION_TRIM_STEP", Decimal("0.1"), maximum=Decimal("0.25"))


@pytest.mark.parametrize(("raw", "share"), [("0", Decimal(0)), ("0.25", Decimal("0.25")), ("15%", Decimal("0.15")),
                                            ("", Decimal("0.1"))])
def test_trim_step_setting_reads_a_fraction_or_a_percentage(monkeypatch, raw, share):
    monkeypatch.setenv("ELION_TRIM_STEP", raw)
    assert env.share("ELION_TRIM_STEP", Decimal("0.1"), maximum=Decimal("0.25")) == share
