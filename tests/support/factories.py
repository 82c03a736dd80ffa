"""Shared test factories and helpers: threads, turns, an API client, waiting for a condition.

Turns are appended through the app's own `message_append`, so a test's rows
obey the same seq / parent / head / binding rule as the app's.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.test import Client

T = TypeVar("T")

HEAD = "head"  # append under the conversation's head
CONFIGURED = "configured"  # stamp the configured provider's binding


def _binding(binding: Any):
    from transcript.provider.binding import configured_provider
    from transcript.provider.gateway import ProviderBinding

    if binding == CONFIGURED:
        return configured_provider().binding()
    if not binding:  # None or {}: legacy rows with no recorded binding
        return None
    return ProviderBinding(**binding)


def turns_append(conversation, *pairs: tuple[str, str], parent: Any = HEAD, binding: Any = CONFIGURED, **fields):
    """Append a straight chain of (role, content) messages and move the head to the last one.

    `binding`: CONFIGURED (as every durable message the app writes), `{}`/None
    for legacy unbound rows, or a dict of the four binding columns.
    """
    from transcript.append import APPENDED_FIELDS, message_append

    parent = conversation.head if parent == HEAD else parent
    stamp = _binding(binding)
    created = []
    for role, content in pairs:
        parent = message_append(
            conversation=conversation, parent=parent, role=role, binding=stamp, make_head=True, content=content, **fields
        )
        created.append(parent)
    conversation.save(update_fields=APPENDED_FIELDS)
    return created


def thread(*pairs: tuple[str, str], persona: str = "elion", title: str = "", binding: Any = CONFIGURED, **kwargs):
    """A new conversation (through `conversation_create`) holding these turns."""
    from conversations.services.threads.thread_writes import conversation_create

    conversation = conversation_create(persona=persona, title=title, **kwargs)
    if pairs:
        turns_append(conversation, *pairs, binding=binding)
    return conversation


def orchard_thread(turns: int, **kwargs):
    """A thread of `turns` messages of a steady size (~25 tokens each), questions and answers alternating:
    the long threads of the per-statement work and branch-column tests."""
    pairs = []
    for n in range(turns // 2):
        pairs += [("user", f"Question {n} about the orchard " * 3), ("assistant", f"Answer {n} about pears " * 4)]
    return thread(*pairs, **kwargs)


def sent_and_answered(conversation, content: str) -> dict:
    """One send through the JSON API (`?stream=false`), answered 200: the user turn and the finished reply."""
    response = Client().post(
        f"/api/conversations/{conversation.pk}/messages/?stream=false", {"content": content},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()


def api_call(client: Client, method: str, path: str, body: dict | None = None, status: int = 200) -> dict:
    """One JSON API request; asserts the status and returns the decoded body (or {})."""
    call = getattr(client, method.lower())
    response = call(path, json.dumps(body), content_type="application/json") if body is not None else call(path)
    if response.streaming:  # a long list streams (the message list without `limit`, exports)
        content = b"".join(response.streaming_content)
        assert response.status_code == status, (response.status_code, content[:500])
        return json.loads(content) if content else {}
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json() if response.content else {}


def wait_until(predicate: Callable[[], T], timeout: float = 20.0, interval: float = 0.05) -> T:
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


async def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.05) -> T:
    """`wait_until` for async tests: `predicate` runs (sync, with ORM access) on a worker thread."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        value = await sync_to_async(predicate)()
        if value:
            return value
        await asyncio.sleep(interval)
    raise AssertionError("condition not met in time")


def request_for(conversation):
    """The model request for a reply at `conversation`'s head, built the way a send builds it (no tools offered)."""
    from continuity.rules.request_store import reply_request_build, send_context_load

    context = send_context_load(conversation)
    return reply_request_build(context, context.get(conversation.head_id), tools=[])


def prompts_marked(conversations) -> None:
    """Mark these conversations' stored prompts stale as a marking operation does (a `StalePrompt` row each),
    with no refresh after it."""
    from transcript.models import StalePrompt

    StalePrompt.objects.bulk_create(
        [StalePrompt(conversation_id=conversation.pk) for conversation in conversations], ignore_conflicts=True
    )
