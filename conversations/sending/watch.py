"""Watching a reply: the stored text so far, then the live remainder.

Used by the watch endpoint (SSE, `Last-Event-ID`), the WebSocket `watch`
frame, a repeated send whose reply is still streaming, and the chat page
after a reload. The watcher may run in another process than the reply.

The handoff between stored text and live deltas, without gap or duplicate:

1. subscribe to the conversation's group (`reply_stream`) first, so every
   delta emitted from now on is buffered for us;
2. read the stored text; its length is the `seq` of the last delta it holds
   (the run stores whole deltas only, `send_pipeline`);
3. send the stored text beyond what the client already has (`after_seq`),
   then each live delta with `seq` above what was sent (`StreamSplice`).

A delta emitted before step 1 and not yet stored in step 2 leaves a gap:
later deltas wait in the splice until the stored text covers it (the run
stores within 250 ms, and at the end); the final `done` always re-reads the
stored text, so the watcher ends with exactly the stored reply.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from uuid import UUID

from django.conf import settings
from django.utils import timezone

from conversations.sending.broadcast import EVENT_TYPE, GroupSubscription, conversation_group, done_data
from conversations.sending.persist import persist
from elion.base.errors import InvalidInput
from transcript.access import access_conversation, message_in_conversation
from transcript.leases import stale_streams_read_as_interrupted
from transcript.models import Message, MessageStatus, Role

# --- the splice: a pure core ---------------------------------------------------------


class StreamSplice:
    """Joins stored text and live deltas into one stream for one client.

    `sent` is how many characters of the reply the client has (its
    `Last-Event-ID`). Each method returns the `(text, seq)` pieces to send
    next, in order; together they are exactly the reply's text after `sent`,
    each character once.
    """

    def __init__(self, sent: int = 0) -> None:
        self.sent = sent
        self._waiting: dict[int, str] = {}  # live deltas beyond a gap, by seq

    @property
    def gapped(self) -> bool:
        return bool(self._waiting)

    def stored(self, content: str) -> list[tuple[str, int]]:
        """The reply's stored text (whole deltas, `len(content)` is its seq)."""
        pieces = []
        if len(content) > self.sent:
            pieces.append((content[self.sent:], len(content)))
            self.sent = len(content)
        return pieces + self._release()

    def live(self, text: str, seq: int) -> list[tuple[str, int]]:
        """One live delta: `text` ends at character `seq` of the reply."""
        if seq <= self.sent:
            return []  # the client has it already
        if seq - len(text) > self.sent:
            self._waiting[seq] = text  # something before it is missing
            return []
        self._waiting[seq] = text
        return self._release()

    def _release(self) -> list[tuple[str, int]]:
        pieces = []
        for seq in sorted(self._waiting):
            text = self._waiting[seq]
            start = seq - len(text)
            if seq <= self.sent:
                del self._waiting[seq]
            elif start <= self.sent:
                pieces.append((text[self.sent - start:], seq))
                self.sent = seq
                del self._waiting[seq]
            else:
                break
        return pieces


# --- reading the stored reply -----------------------------------------------------------


@dataclass(frozen=True)
class ReplySnapshot:
    id: UUID
    user_message_id: UUID | None
    status: str
    content: str
    error: str
    error_detail: str
    diagnostics: dict | None
    metadata: dict | None = None  # how it ended (`done_data`: a refusal, a cut-off's reason)


def reply_snapshot(*, conversation_id: UUID | str, message_id: UUID | str) -> ReplySnapshot:
    """The stored state of one assistant reply (a dead process's stream counts as interrupted)."""
    conversation = access_conversation(conversation_id)
    message = message_in_conversation(conversation, message_id)
    stale_streams_read_as_interrupted([message])
    if message.role != Role.ASSISTANT:
        raise InvalidInput("Only an assistant reply can be watched or stopped.", code="not_a_reply")
    return ReplySnapshot(
        id=message.id,
        user_message_id=message.parent_id,
        status=message.status,
        content=message.content,
        error=message.error,
        error_detail=message.error_detail,
        diagnostics=(message.metadata or {}).get("diagnostics"),
        metadata=message.metadata,
    )


def live_reply_id(*, conversation_id: UUID | str) -> UUID | None:
    """The reply streaming in this conversation now, if any."""
    conversation = access_conversation(conversation_id)
    return (
        Message.objects.filter(conversation=conversation, role=Role.ASSISTANT, status=MessageStatus.STREAMING)
        .exclude(lease_expires_at__lte=timezone.now())  # a reply whose process died is not live
        .order_by("-seq")
        .values_list("id", flat=True)
        .first()
    )


def parse_after_seq(value: object) -> int:
    """A client's `Last-Event-ID` / `after_seq`: characters of the reply it already has."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise InvalidInput("after_seq must be a whole number of at least 0.", code="invalid_last_event_id")
    try:
        seq = int(str(value).strip())
    except ValueError as exc:
        raise InvalidInput("Last-Event-ID must be a whole number of at least 0.", code="invalid_last_event_id") from exc
    if seq < 0:
        raise InvalidInput("Last-Event-ID must be a whole number of at least 0.", code="invalid_last_event_id")
    return seq


# --- the watch ---------------------------------------------------------------------------


def _check_interval() -> float:
    """How long a watcher waits for a live event before it looks at the stored reply."""
    return max(0.25, min(2.0, settings.ELION_STREAM_LEASE_SECONDS / 3))


class ReplyWatch:
    """Follow one reply. `open()` subscribes and validates (raising ServiceError
    before a response starts); `events()` yields `(name, data)` pairs as in
    docs/api.md "Sending", from the stored text to `done`; `close()` unsubscribes."""

    def __init__(self, *, conversation_id: UUID | str, message_id: UUID | str, after_seq: int = 0) -> None:
        self.conversation_id = conversation_id
        self.message_id = message_id
        self.splice = StreamSplice(after_seq)
        self.subscription = GroupSubscription(conversation_group(conversation_id))
        self.snapshot: ReplySnapshot | None = None
        self._error_sent = False

    async def open(self) -> ReplySnapshot:
        # Subscribe before reading: a delta emitted after the read is buffered.
        await self.subscription.open()
        try:
            self.snapshot = await self._read()
        except BaseException:
            await self.close()
            raise
        return self.snapshot

    async def close(self) -> None:
        await self.subscription.close()

    async def _read(self) -> ReplySnapshot:
        return await persist(reply_snapshot)(conversation_id=self.conversation_id, message_id=self.message_id)

    def _deltas(self, pieces: list[tuple[str, int]]) -> Iterator[tuple[str, dict]]:
        return [("delta", {"text": text, "seq": seq}) for text, seq in pieces]

    def _ending(self, snapshot: ReplySnapshot) -> list[tuple[str, dict]]:
        events = self._deltas(self.splice.stored(snapshot.content))
        if snapshot.status == MessageStatus.FAILED and snapshot.error and not self._error_sent:
            events.append(("error", {"error": snapshot.error, "detail": snapshot.error_detail}))
        events.append(("done", done_data(snapshot.id, snapshot.status, snapshot.metadata)))
        return events

    async def events(self, *, announce: bool = True) -> AsyncIterator[tuple[str, dict]]:
        """Precondition: `open()` succeeded."""
        snapshot = self.snapshot
        message_key = str(snapshot.id)
        if announce:
            if snapshot.user_message_id:
                yield "user_message", {"id": str(snapshot.user_message_id)}
            yield "assistant_message", {"id": message_key}
            if snapshot.diagnostics:
                yield "diagnostics", snapshot.diagnostics
        if snapshot.status != MessageStatus.STREAMING:
            for event in self._ending(snapshot):
                yield event
            return
        for event in self._deltas(self.splice.stored(snapshot.content)):
            yield event
        last_read = time.monotonic()
        while True:
            message = await self.subscription.get(timeout=_check_interval())
            if message is None or (self.splice.gapped and time.monotonic() - last_read >= 0.25):
                # Quiet (or missing a delta): the stored reply says where things are.
                snapshot, last_read = await self._read(), time.monotonic()
                if snapshot.status != MessageStatus.STREAMING:
                    for event in self._ending(snapshot):
                        yield event
                    return
                for event in self._deltas(self.splice.stored(snapshot.content)):
                    yield event
            if message is None or message.get("type") != EVENT_TYPE or message.get("message_id") != message_key:
                continue
            name, data = message["event"], message["data"]
            if name == "delta":
                for event in self._deltas(self.splice.live(data["text"], data["seq"])):
                    yield event
            elif name == "done":
                # The run stored its final text before it said `done`.
                for event in self._ending(await self._read()):
                    yield event
                return
            elif name in ("tool", "error", "image"):
                self._error_sent = self._error_sent or name == "error"
                yield name, data
