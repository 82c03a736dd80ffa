"""A send's events, from the user turn to `done`: one event source behind SSE, WebSocket and JSON sends.

Events are `(name, data)` pairs named as in API.md "Sending". Each delta
carries `seq`: the reply's length in characters once the delta is appended,
so the text flushed to the database always ends at a known `seq`, and a
watcher joins stored text and live deltas without gap or duplicate
(`conversations.sending.watch`). Every event is also published to the
conversation's channel-layer group (`conversations.sending.broadcast`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from conversations.models import MessageStatus
from conversations.sending.prepare import PreparedReply
from conversations.sending.run import ReplyRun
from conversations.sending.watch import ReplyWatch


def reply_events(prepared: PreparedReply) -> AsyncIterator[tuple[str, dict]]:
    """Start the reply now and return its events, from the user turn to `done`.

    Not a generator itself: the provider stream starts at once, so a client
    that leaves before reading anything still gets its reply stored.
    Precondition: called inside the running event loop.
    """
    run = None
    if prepared.replay is None:
        run = ReplyRun(prepared)
        run.start()
    return _events(prepared, run)


async def _events(prepared: PreparedReply, run: ReplyRun | None) -> AsyncIterator[tuple[str, dict]]:
    yield "user_message", {"id": str(prepared.user_message_id)}
    yield "assistant_message", {"id": str(prepared.assistant_message_id)}
    if run is None:
        replay = prepared.replay
        if replay.get("diagnostics"):
            yield "diagnostics", replay["diagnostics"]
        if replay["status"] == MessageStatus.STREAMING:
            # The same turn sent again while its reply still streams (another
            # tab, a reload, maybe another process): follow that reply live.
            async for event in _follow(prepared):
                yield event
            return
        if replay.get("error"):
            yield "error", replay["error"]
        if replay["content"]:
            yield "delta", {"text": replay["content"], "seq": len(replay["content"])}
        yield "done", {"message_id": str(prepared.assistant_message_id), "status": replay["status"]}
        return
    yield "diagnostics", prepared.request.diagnostics
    while True:
        name, data = await run.queue.get()
        yield name, data
        if name == "done":
            return


async def _follow(prepared: PreparedReply) -> AsyncIterator[tuple[str, dict]]:
    watch = ReplyWatch(conversation_id=prepared.conversation_id, message_id=prepared.assistant_message_id)
    await watch.open()
    try:
        async for event in watch.events(announce=False):
            yield event
    finally:
        await watch.close()
