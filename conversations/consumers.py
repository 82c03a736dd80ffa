"""WebSocket transport for sending: `ws/conversations/{id}/`.

Thin: checks who is connecting, turns a `{"type": "send", ...}` frame into the
same prepared reply the SSE endpoint uses, and forwards its events as
`{"type": name, ...data}`. A closed socket stops the forwarding, never the reply.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from conversations import services
from conversations.send_pipeline import reply_events, retry_prepare, send_command_from_payload, send_prepare
from elion.access import OWNER_USERNAME, origin_is_cross_site
from elion.errors import ServiceError


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class ConversationConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        host = _header(self.scope, b"host") or ""
        if origin_is_cross_site(_header(self.scope, b"origin"), host):
            await self.close(code=4403)
            return
        user = self.scope.get("user")
        if settings.ELION_PROTECTED and not (user and user.is_authenticated and user.username == OWNER_USERNAME):
            await self.close(code=4401)
            return
        try:
            conversation = await sync_to_async(services.access_conversation)(
                self.scope["url_route"]["kwargs"]["conversation_id"]
            )
        except ServiceError:
            await self.close(code=4404)
            return
        self.conversation_id = conversation.id
        await self.accept()

    async def receive_json(self, content, **kwargs):
        kind = content.get("type") if isinstance(content, dict) else None
        try:
            if kind == "send":
                command = send_command_from_payload(self.conversation_id, content)
                prepared = await sync_to_async(send_prepare)(command)
            elif kind == "retry":
                prepared = await sync_to_async(retry_prepare)(
                    conversation_id=self.conversation_id, message_id=content.get("message_id")
                )
            else:
                raise ServiceError("Frames must have type 'send' or 'retry'.", code="unknown_frame_type")
        except ServiceError as exc:
            await self.send_json({"type": "error", **exc.as_dict()})
            return
        async for name, data in reply_events(prepared):
            await self.send_json({"type": name, **data})

    async def decode_json(self, text_data):
        import json

        try:
            return json.loads(text_data)
        except json.JSONDecodeError:
            return {"type": "__malformed__"}
