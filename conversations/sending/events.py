"""A send's events, from the user turn to `done`: one event source behind SSE, WebSocket and JSON sends.

Events are `(name, data)` pairs named as in docs/api.md "Sending". Each delta
carries `seq`: the reply's length in characters once the delta is appended,
so the text flushed to the database always ends at a known `seq`, and a
watcher joins stored text and live deltas without gap or duplicate
(`conversations.sending.watch`). Every event is also published to the
conversation's channel-layer group (`conversations.sending.broadcast`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from conversations.sending.broadcast import done_data
from conversations.sending.prepare import FreshReply, PreparedReply, ReplayedReply
from conversations.sending.run import ReplyRun
from conversations.sending.watch import ReplyWatch
from transcript.models import MessageStatus


def reply_events(prepared: PreparedReply) -> AsyncIterator[tuple[str, dict]]:
    """Start the reply now and return its events, from the user turn to `done`.

    Not a generator itself: the provider stream starts at once, so a client
    that leaves before reading anything still gets its reply stored.
    Precondition: called inside the running event loop.
    """
    if isinstance(prepared, ReplayedReply):
        return _replayed_events(prepared)
    run = ReplyRun(prepared)
    run.start()
    return _fresh_events(prepared, run)


def _opening(prepared: PreparedReply) -> list[tuple[str, dict]]:
    return [
        ("user_message", {"id": str(prepared.user_message_id)}),
        ("assistant_message", {"id": str(prepared.assistant_message_id)}),
    ]


async def _fresh_events(prepared: FreshReply, run: ReplyRun) -> AsyncIterator[tuple[str, dict]]:
    for event in _opening(prepared):
        yield event
    yield "diagnostics", prepared.request.diagnostics
    while True:
        name, data = await run.queue.get()
        yield name, data
        if name == "done":
            return


async def _replayed_events(replay: ReplayedReply) -> AsyncIterator[tuple[str, dict]]:
    for event in _opening(replay):
        yield event
    if replay.diagnostics:
        yield "diagnostics", replay.diagnostics
    if replay.status == MessageStatus.STREAMING:
        # The same turn sent again while its reply still streams (another
        # tab, a reload, maybe another process): follow that reply live.
        async for event in _follow(replay):
            yield event
        return
    if replay.error:
        yield "error", replay.error
    if replay.content:
        yield "delta", {"text": replay.content, "seq": len(replay.content)}
    yield "done", done_data(replay.assistant_message_id, replay.status, replay.metadata)


async def _follow(prepared: ReplayedReply) -> AsyncIterator[tuple[str, dict]]:
    watch = ReplyWatch(conversation_id=prepared.conversation_id, message_id=prepared.assistant_message_id)
    await watch.open()
    try:
        async for event in watch.events(announce=False):
            yield event
    finally:
        await watch.close()
