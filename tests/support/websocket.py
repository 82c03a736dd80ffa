"""A Channels WebSocket communicator on the app, and reading frames until done."""

from __future__ import annotations

from channels.testing import WebsocketCommunicator

from elion.asgi import application


def communicator(conversation_id, origin=b"http://testserver"):
    headers = [(b"host", b"testserver")]
    if origin:
        headers.append((b"origin", origin))
    return WebsocketCommunicator(application, f"/ws/conversations/{conversation_id}/", headers=headers)


async def receive_until_done(ws) -> list[dict]:
    frames = []
    while True:
        frame = await ws.receive_json_from(timeout=10)
        frames.append(frame)
        if frame["type"] in ("done",) or (frame["type"] == "error" and len(frames) == 1):
            return frames
