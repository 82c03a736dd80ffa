"""WebSocket transport: `ws/conversations/{id}/`.

Thin: checks who is connecting, turns frames into the same service calls the
HTTP API makes, and forwards events as `{"type": name, ...data}`.

* `{"type": "send", ...}` / `{"type": "retry", "message_id"}`: start a reply
  and forward its events (docs/api.md "Sending").
* `{"type": "watch", "message_id"?, "after_seq"?}`: follow a reply: its
  stored text after `after_seq` characters, then the live rest, to `done`
  (`reply_watch`). Without `message_id`, the reply streaming now; when none
  is, an `error` frame `no_live_reply`.
* `{"type": "stop", "message_id"}`: stop a streaming reply (`reply_stop`);
  answered by `{"type": "stopped", "message": {...}, "settled": bool}`, while
  the reply's own stream ends with `done` (`status: interrupted`).
* `{"type": "follow"}`: from now on, every reply that starts in this
  conversation from elsewhere (another tab, another worker) is forwarded
  like a watch, each frame marked `"followed": true`. Acknowledged by
  `{"type": "following"}` once subscribed.

Send, retry and watch frames are handled one after another, in order; a stop
is handled at once, so it can end the reply this socket is forwarding. A
closed socket stops the forwarding, never the reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from importlib import import_module

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from conversations.sending.broadcast import EVENT_TYPE, STARTED, GroupSubscription, conversation_group
from conversations.sending.commands import send_command_from_payload
from conversations.sending.events import reply_events
from conversations.sending.prepare import retry_prepare, send_prepare
from conversations.sending.stop import reply_stop
from conversations.sending.watch import ReplyWatch, live_reply_id, parse_after_seq
from conversations.web import serializers
from elion.base.access import OWNER_USERNAME, origin_is_cross_site, session_is_current
from elion.base.errors import InvalidInput, NotFound, ServiceError
from elion.base.input_checks import json_load_checked
from transcript.access import access_conversation

logger = logging.getLogger(__name__)

# `decode_json`'s answer for a frame the input checks refused (not a type a client can send: it holds a space).
REJECTED_FRAME = "rejected frame"
# How often an open socket re-checks its session (issue: closed within 30 s of logout or rotation).
SESSION_CHECK_SECONDS = 10.0


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class ConversationConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.frames: asyncio.Queue[dict] = asyncio.Queue()
        self.tasks: set[asyncio.Task] = set()
        self.following = False
        # Replies this socket started: `follow` leaves them to the send that forwards them.
        self.own_replies: set[str] = set()
        host = _header(self.scope, b"host") or ""
        if origin_is_cross_site(_header(self.scope, b"origin"), host):
            await self.close(code=4403)
            return
        user = self.scope.get("user")
        if settings.ELION_PROTECTED and not (
            user and user.is_authenticated and user.username == OWNER_USERNAME and await self._session_current()
        ):
            await self.close(code=4401)
            return
        try:
            conversation = await sync_to_async(access_conversation)(
                self.scope["url_route"]["kwargs"]["conversation_id"]
            )
        except ServiceError:
            await self.close(code=4404)
            return
        self.conversation_id = conversation.id
        await self.accept()
        self._spawn(self._handle_in_order())
        if settings.ELION_PROTECTED:
            self._spawn(self._session_watch())

    async def _session_current(self) -> bool:
        """The socket's session still exists (no logout) and was opened with the current password."""
        session = self.scope.get("session")
        key = getattr(session, "session_key", None)
        if not key:
            return False

        def check() -> bool:
            store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
            return store.exists(key) and session_is_current(store.load())

        return await sync_to_async(check)()

    async def _session_watch(self) -> None:
        """Logout or a password rotation closes this socket within SESSION_CHECK_SECONDS."""
        while True:
            await asyncio.sleep(SESSION_CHECK_SECONDS)
            if not await self._session_current():
                await self.close(code=4401)
                return

    def _spawn(self, coroutine: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def disconnect(self, code: int) -> None:
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def receive_json(self, content: object, **kwargs: object) -> None:
        if isinstance(content, dict) and content.get("type") == "stop":
            self._spawn(self._stop(content))
        elif isinstance(content, dict) and content.get("type") == "follow":
            if not self.following:
                self.following = True
                self._spawn(self._follow())
        else:
            self.frames.put_nowait(content)

    async def _handle_in_order(self) -> None:
        while True:
            content = await self.frames.get()
            try:
                await self._handle(content)
            except ServiceError as exc:
                await self.send_json({"type": "error", **exc.as_dict()})
            except Exception:  # noqa: BLE001 - one broken frame must not leave the socket deaf
                logger.exception("websocket frame failed in conversation %s", self.conversation_id)
                await self.send_json(
                    {"type": "error", "error": "internal_error", "detail": "That request failed inside the app."}
                )

    async def _handle(self, content: dict) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == REJECTED_FRAME:
            raise InvalidInput(content["detail"], code=content["error"])
        if kind == "watch":
            await self._watch(content)
            return
        if kind == "send":
            command = send_command_from_payload(self.conversation_id, content)
            prepared = await sync_to_async(send_prepare)(command)
        elif kind == "retry":
            prepared = await sync_to_async(retry_prepare)(
                conversation_id=self.conversation_id, message_id=content.get("message_id")
            )
        else:
            raise ServiceError(
                "Frames must have type 'send', 'retry', 'watch', 'stop' or 'follow'.", code="unknown_frame_type"
            )
        self.own_replies.add(str(prepared.assistant_message_id))
        async for name, data in reply_events(prepared):
            await self.send_json({"type": name, **data})

    async def _watch(self, content: dict) -> None:
        after_seq = parse_after_seq(content.get("after_seq"))
        message_id = content.get("message_id")
        if message_id is None:
            message_id = await sync_to_async(live_reply_id)(conversation_id=self.conversation_id)
            if message_id is None:
                raise NotFound("No reply is streaming in this conversation.", code="no_live_reply")
        watch = ReplyWatch(conversation_id=self.conversation_id, message_id=message_id, after_seq=after_seq)
        await watch.open()
        try:
            async for name, data in watch.events():
                await self.send_json({"type": name, **data})
        finally:
            await watch.close()

    async def _follow(self) -> None:
        async with GroupSubscription(conversation_group(self.conversation_id)) as events:
            await self.send_json({"type": "following"})
            while True:
                message = await events.get(timeout=3600)
                if message is None or message.get("type") != EVENT_TYPE or message.get("event") != STARTED:
                    continue
                if message["message_id"] in self.own_replies:
                    continue
                watch = ReplyWatch(conversation_id=self.conversation_id, message_id=message["message_id"])
                try:
                    await watch.open()
                except ServiceError:
                    continue
                try:
                    async for name, data in watch.events():
                        await self.send_json({"type": name, **data, "followed": True})
                finally:
                    await watch.close()

    async def _stop(self, content: dict) -> None:
        try:
            message, settled = await reply_stop(conversation_id=self.conversation_id, message_id=content.get("message_id"))
        except ServiceError as exc:
            await self.send_json({"type": "error", **exc.as_dict()})
            return
        body = await sync_to_async(serializers.message_repr)(message)  # reads the attachment manifest
        await self.send_json({"type": "stopped", "message": body, "settled": settled})

    async def decode_json(self, text_data: str) -> object:
        # The same checks as every JSON body (depth, NUL, surrogates): a bad frame is answered, never a 1011 close.
        try:
            return json_load_checked(text_data)
        except InvalidInput as exc:
            return {"type": REJECTED_FRAME, **exc.as_dict()}
