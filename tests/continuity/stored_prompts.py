"""Threads with stored prompts, and the prompts' texts: what the refresh tests build and read."""

from __future__ import annotations

from continuity.rules.prompt_store import static_prompt_ensure
from tests.support.factories import thread
from transcript.models import Conversation, Message, Role


def threads_with_prompts(count: int) -> list[Conversation]:
    conversations = [thread(("user", f"Hello {i}"), ("assistant", "Hello back.")) for i in range(count)]
    for conversation in conversations:
        static_prompt_ensure(conversation)
    return conversations


def prompts() -> list[str]:
    return list(Message.objects.filter(role=Role.SYSTEM).values_list("content", flat=True))
