"""A refresh gives way to the requests served beside it (`continuity.rules.prompt_refresh`, issue 40: "the
longest time any other request waits meanwhile: ≤ 1.5× of that request's own time"). A refresh is Python work
in one thread of the server; a send in another thread releases the GIL at every statement and waits to get it
back, up to the interpreter's switch interval each time. While any refresh runs, the interval is
`REFRESH_SWITCH_INTERVAL`; when the last one ends, the interpreter's own again.
"""

from __future__ import annotations

import sys
import threading

import pytest

from continuity.rules import prompt_refresh
from continuity.rules.prompt_store import static_prompt_ensure
from conversations.services.settings_writes import assistant_settings_update
from tests.support.factories import thread
from transcript.models import StalePrompt

pytestmark = pytest.mark.django_db


@pytest.fixture
def own_interval():
    """A switch interval of the test's own, put back after it."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.004)
    yield 0.004
    sys.setswitchinterval(before)


def test_a_refresh_runs_at_the_short_interval_and_puts_the_interpreters_back(own_interval, monkeypatch):
    conversations = [thread(("user", f"Hello {i}"), ("assistant", "Hello back.")) for i in range(3)]
    for conversation in conversations:
        static_prompt_ensure(conversation)
    seen = []
    rebuilt = prompt_refresh.prompt_rows_rebuilt

    def watched(prompts):
        seen.append(sys.getswitchinterval())
        return rebuilt(prompts)

    monkeypatch.setattr(prompt_refresh, "prompt_rows_rebuilt", watched)
    assistant_settings_update(custom_instructions="Answer in riddles.")
    assert not StalePrompt.objects.exists()
    assert seen and all(value == pytest.approx(prompt_refresh.REFRESH_SWITCH_INTERVAL) for value in seen)
    assert sys.getswitchinterval() == pytest.approx(own_interval)


def test_overlapping_refreshes_put_the_interval_back_only_when_the_last_one_ends(own_interval):
    entered, release = threading.Event(), threading.Event()

    def other_refresh():
        with prompt_refresh._gives_way_to_requests():
            entered.set()
            release.wait(10)

    other = threading.Thread(target=other_refresh)
    other.start()
    entered.wait(10)
    with prompt_refresh._gives_way_to_requests():
        assert sys.getswitchinterval() == pytest.approx(prompt_refresh.REFRESH_SWITCH_INTERVAL)
    assert sys.getswitchinterval() == pytest.approx(prompt_refresh.REFRESH_SWITCH_INTERVAL), "the other still runs"
    release.set()
    other.join(10)
    assert sys.getswitchinterval() == pytest.approx(own_interval)
