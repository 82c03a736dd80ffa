"""The offline demo provider: a deterministic, clearly labelled stand-in when no key is set."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

from transcript.provider.events import Completed, ProviderEvent, TextDelta
from transcript.provider.wire import content_text


async def offline_demo_events(messages: list[dict[str, Any]]) -> AsyncIterator[ProviderEvent]:
    """Deterministic, clearly labelled stand-in so the app works without a key."""
    said = next((content_text(m.get("content")) for m in reversed(messages) if m["role"] == "user"), "")
    text = f"(Offline demo — no OPENAI_API_KEY is set.) You said: {said[:200]}"
    for piece in re.findall(r"\s*\S+", text):
        await asyncio.sleep(0.02)  # paced like a real stream so the UI path is exercised
        yield TextDelta(piece)
    yield Completed(None, None)
