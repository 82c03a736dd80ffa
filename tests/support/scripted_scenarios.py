"""The scripted provider's scenario library (issue 31): each wire case the app must meet, by name.

`SCENARIOS[name]` is the list of replies to script for it (`provider.script(*SCENARIOS[name])`);
`SELECTOR_SCENARIOS` says on which API selectors each one exists (the Responses API's built-in items
and phases have no Chat Completions form). The tests that walk the library are in
`tests/transcript/provider/test_scenarios.py`.
"""

from __future__ import annotations

from tests.support.scripted_provider import ScriptedImageCall, ScriptedReply

LIBRARY_CALL = {"name": "list_library", "arguments": {}}

SCENARIOS: dict[str, list[ScriptedReply]] = {
    "refusal": [ScriptedReply(refusal="I can't help with that.")],
    "incomplete": [ScriptedReply(text="A story that goes on and", incomplete="max_output_tokens")],
    "content_filter": [ScriptedReply(text="Part of an answer", incomplete="content_filter")],
    "preamble_with_phase": [
        ScriptedReply(preamble="Let me look that up. ", tool_calls=[{**LIBRARY_CALL, "call_id": "call_pre"}]),
        ScriptedReply(text="The Library is empty.", phase="final_answer"),
    ],
    "parallel_calls": [
        ScriptedReply(tool_calls=[{**LIBRARY_CALL, "call_id": "call_p1"}, {**LIBRARY_CALL, "call_id": "call_p2"}]),
        ScriptedReply(text="Both came back empty."),
    ],
    "web_search_sources": [ScriptedReply(
        web_searches=[{"query": "bee dances", "sources": ["https://example.org/bees", "https://example.net/hive"]}],
        text="Bees dance to share directions.",
        citations=[{"url": "https://example.org/bees", "title": "Bees", "start": 0, "end": 31}],
    )],
    "image_partials": [ScriptedReply(images=[ScriptedImageCall(partials=3)], text="Here it is.")],
    "mid_stream_error": [ScriptedReply(chunks=["Half", " a", " reply"], error_after_chunks=2)],
    "rate_limited_with_retry_after": [ScriptedReply(status=429, retry_after="0"), ScriptedReply(text="After waiting.")],
    "invalid_encrypted_content": [ScriptedReply(reasoning=["Thinking it over."], text="First answer.")],
}

BOTH = ("responses", "chat.completions")
SELECTOR_SCENARIOS: dict[str, tuple[str, ...]] = {
    "refusal": BOTH,
    "incomplete": BOTH,
    "content_filter": BOTH,
    "preamble_with_phase": BOTH,
    "parallel_calls": BOTH,
    "web_search_sources": ("responses",),
    "image_partials": ("responses",),
    "mid_stream_error": BOTH,
    "rate_limited_with_retry_after": BOTH,
    "invalid_encrypted_content": ("responses",),
}


def scenario(name: str) -> list[ScriptedReply]:
    """Fresh copies of a scenario's replies (a reply may be changed by the test that scripts it)."""
    from dataclasses import replace

    return [replace(reply) for reply in SCENARIOS[name]]
