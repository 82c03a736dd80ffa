"""bench/budget_cost.py runs end to end on a small thread, and its table says what it measured."""

from __future__ import annotations

import argparse
import asyncio
from decimal import Decimal

import pytest

from bench import budget_cost

pytestmark = pytest.mark.django_db(transaction=True)


def test_budget_cost_a_step_keeps_more_of_the_input_cached_than_step_zero(settings):
    # Set through the fixture first, so what the bench sets on the settings is undone after the test.
    settings.ELION_INPUT_BUDGET_TOKENS = 3_000
    settings.ELION_TRIM_STEP = Decimal(0)
    settings.OPENAI_API_KEY = "test-key"
    args = argparse.Namespace(sends=24, budget=3_000, steps=["0", "0.25"], seed=31)
    threads, budget = asyncio.run(budget_cost.measure(args))
    zero, stepped = threads
    assert zero.trimmed_from is not None and zero.sends_past > 5
    assert stepped.cached_tokens / stepped.input_tokens > zero.cached_tokens / zero.input_tokens
    assert stepped.smallest_history >= (budget - 0.25 * budget - 1_500) / budget  # budget − step − the prompt
    lines = budget_cost.report(threads, budget, args)
    assert "source:" in lines[1] and "$5.00 input" in lines[1]
    rows = [line for line in lines if line.startswith("| 0")]
    assert rows[0].split(" | ")[5] == "1.00×" and rows[1].startswith("| 0.25 |")
