"""The scripted provider's prefix cache: `cached_tokens` as OpenAI reports it, through the real SDK over HTTP.

OpenAI ("Prompt caching 201", the cookbook): a prompt of 1,024 tokens or more is served from the cache up to
its first token that differs from a recent request routed alike (`prompt_cache_key`), in 128-token blocks.
The benches measure the trim step's cache share against this simulation, so it must be right.
"""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.scripted_provider import (
    CACHE_BLOCK_TOKENS,
    CACHE_MIN_TOKENS,
    CHARACTERS_PER_TOKEN,
    ScriptedProvider,
    ScriptedReply,
    cached_prefix_tokens,
    prompt_text,
    prompt_tokens,
)


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider() as server:
        yield server


def client(provider: ScriptedProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=provider.base_url, api_key="test", max_retries=0)


def turns(count: int, size: int = 400) -> list[dict]:
    return [{"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n:04d} " + "w" * size}
            for n in range(count)]


def respond(provider: ScriptedProvider, items: list[dict], key: str | None = "conv-a"):
    extra = {"input": items, **({"prompt_cache_key": key} if key else {})}
    return client(provider).responses.create(model="gpt-5.5", extra_body=extra)


def test_prompt_cache_first_request_is_a_miss_and_the_next_is_served_its_shared_prefix(provider):
    history = turns(30)  # about 3,100 tokens
    first = respond(provider, [{"role": "system", "content": "Stored prompt."}, *history])
    assert first.usage.input_tokens_details.cached_tokens == 0
    assert first.usage.input_tokens == prompt_tokens(prompt_text("/v1/responses", provider.last_request().body))

    grown = [{"role": "system", "content": "Stored prompt."}, *history, *turns(2, 50)]
    second = respond(provider, grown)
    shared = len(prompt_text("/v1/responses", provider.requests[0].body)) - 1  # up to the closing "]" of the input
    expected = shared // CHARACTERS_PER_TOKEN // CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS
    assert second.usage.input_tokens_details.cached_tokens == expected >= CACHE_MIN_TOKENS
    assert expected % CACHE_BLOCK_TOKENS == 0
    assert second.usage.input_tokens > expected


def test_prompt_cache_is_per_prompt_cache_key(provider):
    items = [{"role": "system", "content": "Stored prompt."}, *turns(30)]
    respond(provider, items, key="conv-a")
    assert respond(provider, items, key="conv-b").usage.input_tokens_details.cached_tokens == 0
    assert respond(provider, items, key="conv-a").usage.input_tokens_details.cached_tokens > CACHE_MIN_TOKENS


def test_prompt_cache_a_changed_start_or_a_short_prompt_is_never_served(provider):
    history = turns(30)
    respond(provider, [{"role": "system", "content": "Stored prompt."}, *history])
    trimmed = respond(provider, [{"role": "system", "content": "Stored prompt."}, *history[2:]])
    assert trimmed.usage.input_tokens_details.cached_tokens == 0  # the first turn differs: only "Stored prompt."
    short = [{"role": "user", "content": "hello " * 100}]  # about 160 tokens
    respond(provider, short)
    assert respond(provider, short).usage.input_tokens_details.cached_tokens == 0


def test_prompt_cache_chat_completions_reports_prompt_tokens_details(provider):
    messages = [{"role": "system", "content": "Stored prompt."}, *turns(30)]
    chat = client(provider).chat.completions
    first = chat.create(model="gpt-5.5", messages=messages)
    assert first.usage.prompt_tokens_details is None  # a miss: this server, like many, leaves the details out
    again = chat.create(model="gpt-5.5", messages=[*messages, {"role": "user", "content": "More?"}])
    assert again.usage.prompt_tokens_details.cached_tokens >= CACHE_MIN_TOKENS
    assert again.usage.prompt_tokens_details.cached_tokens % CACHE_BLOCK_TOKENS == 0


def test_prompt_cache_a_scripted_usage_wins(provider):
    items = [{"role": "system", "content": "Stored prompt."}, *turns(30)]
    respond(provider, items)
    provider.script(ScriptedReply(text="Hi.", usage={"input_tokens": 5_000, "cached_tokens": 7}))
    assert respond(provider, items).usage.input_tokens_details.cached_tokens == 7


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 12_000), st.text(alphabet="ab", max_size=600), st.text(alphabet="ab", max_size=600))
def test_prompt_cache_served_tokens_are_whole_blocks_from_1024_within_the_common_prefix(shared, mine, theirs):
    prompt, seen = "x" * shared + mine, "x" * shared + theirs
    served = cached_prefix_tokens(prompt, seen)
    common = next((i for i, (a, b) in enumerate(zip(prompt, seen, strict=False)) if a != b), min(len(prompt), len(seen)))
    assert served % CACHE_BLOCK_TOKENS == 0
    assert served == 0 or served >= CACHE_MIN_TOKENS
    assert served * CHARACTERS_PER_TOKEN <= common < (served + CACHE_BLOCK_TOKENS) * CHARACTERS_PER_TOKEN or (
        served == 0 and common < CACHE_MIN_TOKENS * CHARACTERS_PER_TOKEN
    )
