"""A reply's events beyond its own process: the channel layer side of streaming.

Two groups per reply, on the configured channel layer (Redis with
`REDIS_URL`, so every worker process shares them; in-memory otherwise):

* `conversation_group(conversation_id)`: every event of every reply in the
  conversation, as `{"type": "reply.event", "message_id", "event", "data"}`,
  in the order the run emitted them. Watchers (`reply_watch`) and the stop
  endpoint listen here.
* `stop_group(message_id)`: the run listens here for `{"type": "reply.stop"}`.

A broadcast is a side channel: when the layer fails, the reply still runs,
streams to its sender and is stored; watchers fall back on the stored text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from uuid import UUID

from channels.layers import get_channel_layer

from elion.base.rows import id_or_not_found

logger = logging.getLogger(__name__)

EVENT_TYPE = "reply.event"
STOP_TYPE = "reply.stop"
# Group-only event: a reply started (carries the user turn it answers).
STARTED = "started"


def conversation_group(conversation_id: UUID | str) -> str:
    """The channel-layer group of one conversation; a malformed id is a 404 (group names allow only ASCII)."""
    conversation_id = id_or_not_found(
        conversation_id, kind="uuid", missing="No conversation has that id.", code="conversation_not_found"
    )
    return f"elion.conversation.{conversation_id}"


def stop_group(message_id: UUID | str) -> str:
    return f"elion.reply-stop.{message_id}"


class GroupSubscription:
    """One process-local channel subscribed to a group, read by a task of its own.

    Messages wait in a local queue, so a caller may time out its wait without
    cancelling a receive on the layer (which could lose a message).
    Usage: `async with GroupSubscription(group) as sub: await sub.get(timeout)`.
    """

    def __init__(self, group: str) -> None:
        self.group = group
        self.layer = get_channel_layer()
        self.channel: str | None = None
        self.inbox: asyncio.Queue[dict] = asyncio.Queue()
        self._reader: asyncio.Task | None = None

    async def open(self) -> GroupSubscription:
        if self.layer is None:
            return self
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(self.group, self.channel)
        self._reader = asyncio.get_running_loop().create_task(self._read())
        return self

    async def _read(self) -> None:
        while True:
            self.inbox.put_nowait(await self.layer.receive(self.channel))

    async def get(self, timeout: float) -> dict | None:
        """The next message, or None when none came within `timeout` seconds."""
        try:
            return await asyncio.wait_for(self.inbox.get(), timeout)
        except TimeoutError:
            return None

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
            self._reader = None
        if self.channel is not None:
            channel, self.channel = self.channel, None
            try:
                await self.layer.group_discard(self.group, channel)
            except Exception:  # noqa: BLE001 - leaving a group must not mask what ended the subscription
                logger.warning("could not leave channel group %s", self.group, exc_info=True)

    async def __aenter__(self) -> GroupSubscription:
        try:
            return await self.open()
        except BaseException:
            await self.close()
            raise

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class ReplyBroadcast:
    """Publishes one run's events to its conversation group and hears stop requests.

    `publish` never blocks the run: events go through a queue to one sender
    task, which keeps their order.
    """

    def __init__(self, conversation_id: UUID, message_id: UUID) -> None:
        self.conversation_id = conversation_id
        self.message_id = message_id
        self.layer = get_channel_layer()
        self._outbox: asyncio.Queue[tuple[str, dict] | None] = asyncio.Queue()
        self._sender: asyncio.Task | None = None
        self._stop_listener: asyncio.Task | None = None
        self._stops: GroupSubscription | None = None

    def start(self, on_stop: Callable[[], None], stop_recorded: Callable[[], Awaitable[bool]]) -> None:
        """Start publishing, and listening for a stop request (then `on_stop()`).

        Nothing here waits for the layer, so the provider call starts at once.
        The listener subscribes first, then asks `stop_recorded()` (the
        database flag), so a stop asked before it listened is not missed.
        Precondition: called from the run's task before it emits anything.
        """
        loop = asyncio.get_running_loop()
        if self.layer is not None:
            self._sender = loop.create_task(self._send_all())
        self._stop_listener = loop.create_task(self._listen_for_stop(on_stop, stop_recorded))

    async def _listen_for_stop(self, on_stop: Callable[[], None], stop_recorded: Callable[[], Awaitable[bool]]) -> None:
        if self.layer is not None:
            self._stops = GroupSubscription(stop_group(self.message_id))  # closed by `close`, even half open
            try:
                await self._stops.open()
            except Exception:  # noqa: BLE001 - the database flag still stops the run
                logger.warning("reply %s: channel layer unavailable; stop requests arrive by database only",
                               self.message_id, exc_info=True)
                stops, self._stops = self._stops, None
                await stops.close()
        if await stop_recorded():
            on_stop()
        while self._stops is not None:
            message = await self._stops.get(timeout=3600)
            if message is not None and message.get("type") == STOP_TYPE:
                on_stop()

    def publish(self, name: str, data: dict) -> None:
        if self._sender is not None:
            self._outbox.put_nowait((name, data))

    async def _send_all(self) -> None:
        group = conversation_group(self.conversation_id)
        while True:
            item = await self._outbox.get()
            if item is None:
                return
            name, data = item
            try:
                await self.layer.group_send(
                    group, {"type": EVENT_TYPE, "message_id": str(self.message_id), "event": name, "data": data}
                )
            except Exception:  # noqa: BLE001 - watchers re-read the stored text; the reply goes on
                logger.warning("reply %s: could not broadcast %s", self.message_id, name, exc_info=True)

    async def close(self) -> None:
        """Send what is queued (the final `done` included), then stop listening."""
        if self._stop_listener is not None:
            self._stop_listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._stop_listener
        if self._stops is not None:
            await self._stops.close()
        if self._sender is not None:
            self._outbox.put_nowait(None)
            try:
                await asyncio.wait_for(self._sender, timeout=10)
            except (TimeoutError, asyncio.CancelledError):
                logger.warning("reply %s: broadcast queue not drained", self.message_id)


async def request_stop_broadcast(message_id: UUID | str) -> None:
    """Tell the run of `message_id`, in whichever process it runs, to stop now."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(stop_group(message_id), {"type": STOP_TYPE})
    except Exception:  # noqa: BLE001 - the database flag is the durable request
        logger.warning("could not broadcast a stop for reply %s", message_id, exc_info=True)


def done_data(message_id: UUID | str, status: str, metadata: dict | None) -> dict:
    """A reply's `done` event: its id and status, and how it ended when that is news for the page:
    `incomplete_reason` (status `incomplete`: the provider cut it off) and `refusal` (the model declined)."""
    data: dict = {"message_id": str(message_id), "status": status}
    metadata = metadata or {}
    if metadata.get("incomplete_reason"):
        data["incomplete_reason"] = metadata["incomplete_reason"]
    if metadata.get("refusal"):
        data["refusal"] = True
    return data
