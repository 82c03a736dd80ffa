"""Read a text/event-stream incrementally: one event at a time, with its `id:`.

Works on any async iterator of bytes: a Django test client's
`response.streaming_content` or httpx's `response.aiter_bytes()`.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class SseEvent:
    name: str
    data: dict
    id: str | None


class SseStream:
    def __init__(self, chunks):
        self._chunks = chunks.__aiter__()
        self._buffer = ""
        self.events: list[SseEvent] = []

    async def next(self, timeout: float = 10.0) -> SseEvent | None:
        """The next event, or None at the end of the stream."""
        while "\n\n" not in self._buffer:
            try:
                chunk = await asyncio.wait_for(self._chunks.__anext__(), timeout)
            except StopAsyncIteration:
                return None
            self._buffer += chunk.decode() if isinstance(chunk, bytes) else chunk
        frame, self._buffer = self._buffer.split("\n\n", 1)
        name, data, event_id = "message", None, None
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: "):])
            elif line.startswith("id: "):
                event_id = line[len("id: "):]
        event = SseEvent(name, data, event_id)
        self.events.append(event)
        return event

    async def until(self, predicate, timeout: float = 10.0) -> SseEvent:
        """Read until an event satisfies `predicate`; return it."""
        while True:
            event = await self.next(timeout)
            if event is None:
                raise AssertionError(f"stream ended before the expected event; got {self.events}")
            if predicate(event):
                return event

    async def until_done(self, timeout: float = 10.0) -> SseEvent:
        return await self.until(lambda e: e.name == "done", timeout)

    def text(self) -> str:
        return "".join(e.data["text"] for e in self.events if e.name == "delta")

    def seqs(self) -> list[int]:
        return [e.data["seq"] for e in self.events if e.name == "delta"]
