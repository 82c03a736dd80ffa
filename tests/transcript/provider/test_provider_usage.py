"""Provider-reported usage stored per reply (issue "GPT-5.5 …", usage part): input, cached input, output and
reasoning tokens, on both API selectors, summed over a reply's tool rounds. Real SDK, scripted provider."""

from __future__ import annotations

import pytest

from tests.support.factories import sent_and_answered as send
from tests.support.factories import thread
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("selector", ["responses", "chat.completions"])
def test_provider_usage_is_stored_with_cached_and_reasoning_tokens(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    usage = {"input_tokens": 120, "output_tokens": 30, "cached_tokens": 100, "reasoning_tokens": 12}
    scripted_provider.script(ScriptedReply(text="Counted.", usage=usage))
    body = send(thread(binding=None), "Count me")
    stored = Message.objects.get(pk=body["assistant_message"]["id"]).metadata["usage"]
    assert stored == {"input_tokens": 120, "cached_input_tokens": 100, "output_tokens": 30, "reasoning_tokens": 12}
    assert body["assistant_message"]["metadata"]["usage"] == stored  # the API returns what is stored


def test_provider_usage_is_summed_over_a_replys_tool_rounds(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "responses"
    scripted_provider.script(
        ScriptedReply(
            tool_calls=[{"name": "list_library", "arguments": {}, "call_id": "call_u1"}],
            usage={"input_tokens": 50, "output_tokens": 5, "cached_tokens": 40, "reasoning_tokens": 3},
        ),
        ScriptedReply(text="Done.", usage={"input_tokens": 70, "output_tokens": 9, "cached_tokens": 50, "reasoning_tokens": 4}),
    )
    body = send(thread(), "Look in the Library")
    stored = Message.objects.get(pk=body["assistant_message"]["id"]).metadata["usage"]
    assert stored == {"input_tokens": 120, "cached_input_tokens": 90, "output_tokens": 14, "reasoning_tokens": 7}
