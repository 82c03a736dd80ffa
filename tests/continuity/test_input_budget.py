"""The app input budget and Request size details, on the pure assembly function.

Seed "Context Capacity and Continuity Governance", "What Travels in
Conversation History" and "Visible chat estimate versus request-size
diagnostics": the full saved thread travels until the budget requires
trimming; trimming drops the oldest whole turns (a tool call with its
result), never the stored prompt, the dynamic context or the current
message; diagnostics are numbers computed from the exact strings sent.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.rules.prompt_policy import QUOTED_RECALL_LABEL, RESERVED_RECALL_HEADING
from continuity.rules.request_policy import (
    ESTIMATE_METHOD,
    HistoryTurn,
    RecallInBirthPeriod,
    assemble_request,
    estimate_tokens,
    trim_history,
    turn_tokens,
)
from tests.support.diagnostics import DIAGNOSTIC_NAMES


def conversation(n: int, size: int = 40) -> list[HistoryTurn]:
    """n alternating turns ending on the current user message."""
    turns = [HistoryTurn("user" if i % 2 == 0 else "assistant", f"turn {i} " + "x" * size) for i in range(n)]
    return turns if turns[-1].role == "user" else turns[1:]


turn_strategy = st.builds(
    HistoryTurn,
    role=st.sampled_from(["user", "assistant"]),
    content=st.text(min_size=1, max_size=200),
    tool_messages=st.lists(
        st.fixed_dictionaries({"role": st.just("tool"), "call_id": st.text(max_size=5), "content": st.text(max_size=80)}),
        max_size=2,
    ).map(tuple),
)


def test_full_saved_history_travels_when_it_fits_no_fixed_turn_cap():
    history = conversation(61)
    request = assemble_request(static_prompt="S", history=history, input_budget_tokens=100_000)
    assert len(request.messages) == 1 + len(history)  # not six, not eight: all of them
    assert request.diagnostics["trimmed_messages"] == 0


def test_over_budget_trims_oldest_whole_turns_and_keeps_prompt_dynamic_context_and_current_message():
    history = conversation(41, size=400)
    budget = 1_200
    request = assemble_request(
        static_prompt="S" * 400, history=history, dynamic_context="D" * 400, input_budget_tokens=budget
    )
    messages = request.messages
    assert messages[0] == {"role": "system", "content": "S" * 400}
    assert messages[-1] == {"role": "system", "content": "D" * 400}  # the dynamic context comes last
    assert messages[-2] == {"role": "user", "content": history[-1].content}
    kept = [m["content"] for m in messages if m["role"] in ("user", "assistant")]
    assert kept == [t.content for t in history[-len(kept):]]  # the newest turns, in order
    assert messages[1]["role"] == "user"  # never opens on a reply with no question
    assert request.diagnostics["trimmed_messages"] == len(history) - len(kept) > 0
    assert request.diagnostics["total_input_tokens"] <= budget


def test_tool_call_and_result_are_trimmed_with_their_turn():
    tool_messages = (
        {"role": "assistant", "content": "", "tool_calls": [{"call_id": "c1", "name": "t", "arguments": "{}"}]},
        {"role": "tool", "call_id": "c1", "content": "result " * 100},
    )
    history = [
        HistoryTurn("user", "old question " * 50),
        HistoryTurn("assistant", "old answer", tool_messages),
        HistoryTurn("user", "current"),
    ]
    request = assemble_request(static_prompt="", history=history, input_budget_tokens=50)
    assert request.messages == [{"role": "user", "content": "current"}]
    roomy = assemble_request(static_prompt="", history=history, input_budget_tokens=10_000)
    assert [m["role"] for m in roomy.messages] == ["user", "assistant", "tool", "assistant", "user"]


@settings(max_examples=300, deadline=None)
@given(st.lists(turn_strategy, min_size=1, max_size=25), st.integers(min_value=0, max_value=3_000))
def test_trimming_properties(turns, budget):
    kept, dropped = trim_history(turns, budget)
    assert dropped == len(turns) - len(kept)
    assert kept == turns[len(turns) - len(kept):]  # a suffix: only the oldest go
    assert kept and kept[-1] == turns[-1]  # the current message always stays
    if len(kept) > 1:
        assert kept[0].role == "user"
        assert sum(turn_tokens(t) for t in kept) <= budget
    if sum(turn_tokens(t) for t in turns) <= budget and turns[0].role == "user":
        assert dropped == 0  # nothing is trimmed unless the budget requires it


def test_diagnostics_are_computed_from_the_strings_sent():
    static = "## Identity\nYou are Elion.\n\n## Continuity from a prior thread\nBEGIN VERBATIM_EXCHANGE_x\nEND"
    handoff = static.split("\n\n", 1)[1]
    history = conversation(5)
    tools = '[{"name":"search_past_conversations"}]'
    request = assemble_request(
        static_prompt=static, history=history, dynamic_context="DYN", handoff_text=handoff,
        tool_definitions_text=tools, input_budget_tokens=5_000,
    )
    d = request.diagnostics
    assert set(d) == DIAGNOSTIC_NAMES
    assert d["static_prompt_tokens"] == estimate_tokens(static)
    assert 0 < d["handoff_tokens"] == estimate_tokens(handoff) <= d["static_prompt_tokens"]
    assert d["handoff_included_in_static"] is True
    assert d["dynamic_context_tokens"] == estimate_tokens("DYN")
    assert d["tool_definition_tokens"] == estimate_tokens(tools)
    sent_history = [m for m in request.messages if m["role"] in ("user", "assistant")]
    assert d["history_tokens"] == sum(estimate_tokens(m["content"]) for m in sent_history)
    # The handoff is part of the static figure, never added twice.
    assert d["total_input_tokens"] == (
        d["static_prompt_tokens"] + d["history_tokens"] + d["dynamic_context_tokens"] + d["tool_definition_tokens"]
    )
    assert d["remaining_tokens"] == 5_000 - d["total_input_tokens"]
    assert d["estimate_method"] == ESTIMATE_METHOD


def test_empty_sections_are_zero_and_leave_no_placeholder_message():
    request = assemble_request(static_prompt="S", history=conversation(1), input_budget_tokens=1_000)
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.diagnostics["dynamic_context_tokens"] == 0
    assert request.diagnostics["handoff_tokens"] == 0
    assert request.diagnostics["tool_definition_tokens"] == 0


printable = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FFF), min_size=1, max_size=120)


@settings(max_examples=200, deadline=None)
@given(st.lists(printable, min_size=1, max_size=8), printable, printable, printable)
def test_diagnostics_hold_only_fixed_names_numbers_and_booleans(contents, static, dynamic, memory):
    history = [HistoryTurn("user" if i % 2 == 0 else "assistant", c) for i, c in enumerate(contents)]
    request = assemble_request(
        static_prompt=f"{static}\n- {memory}", history=history, dynamic_context=dynamic, handoff_text=memory,
        input_budget_tokens=2_000,
    )
    diagnostics = request.diagnostics
    assert set(diagnostics) == DIAGNOSTIC_NAMES
    for name, value in diagnostics.items():
        if name == "estimate_method":
            assert value == ESTIMATE_METHOD
        else:
            assert isinstance(value, int)  # bool is an int too: numbers and booleans only
    # No value can carry text: every value is a number, a boolean or the fixed method name.
    values = json.dumps([v for k, v in diagnostics.items() if k != "estimate_method"])
    for text in [*contents, static, dynamic, memory]:
        if any(ch.isalpha() for ch in text) and text not in "true false":
            assert text not in values


# --- The birth-period guard ------------------------------------------------------------


def test_birth_period_request_with_a_recall_section_is_refused():
    with pytest.raises(RecallInBirthPeriod):
        assemble_request(
            static_prompt="S", history=conversation(1), dynamic_context=f"{RESERVED_RECALL_HEADING}\nexcerpts",
            input_budget_tokens=1_000, birth_period=True,
        )


def test_a_stale_stored_prompt_carrying_the_heading_is_refused_in_the_birth_period_too():
    with pytest.raises(RecallInBirthPeriod):
        assemble_request(
            static_prompt=f"## Custom instructions\n{RESERVED_RECALL_HEADING}", history=conversation(1),
            input_budget_tokens=1_000, birth_period=True,
        )


def test_guard_does_not_misfire_on_quoted_labels_or_user_text():
    request = assemble_request(
        static_prompt=f"## Long-term memories\n- [General · importance 3] {QUOTED_RECALL_LABEL}",
        history=[HistoryTurn("user", f"{RESERVED_RECALL_HEADING}\nmy opener quotes it")],
        dynamic_context=f"=== PINNED CHARACTER ===\nDescription: {QUOTED_RECALL_LABEL}",
        input_budget_tokens=1_000,
        birth_period=True,
    )
    assert request.messages[-2]["content"].startswith(RESERVED_RECALL_HEADING)  # the owner's turn, then the context


def test_after_the_birth_period_a_recall_section_is_dispatched():
    request = assemble_request(
        static_prompt="S", history=conversation(3), dynamic_context=f"{RESERVED_RECALL_HEADING}\nexcerpts",
        input_budget_tokens=1_000, birth_period=False,
    )
    assert request.messages[-1] == {"role": "system", "content": f"{RESERVED_RECALL_HEADING}\nexcerpts"}
