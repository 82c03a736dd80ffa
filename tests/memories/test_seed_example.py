"""The seed's worked example ("Memory mutation behavior"), checked against the
system message the scripted provider actually received:

    Thread A: 1, 2            memory 3 added
    New Thread B: 1, 2, 3
    edit 2    -> Thread A receives the edited 2, still not 3
    delete 1  -> removed from Thread A (and B), cannot enter future snapshots
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from memories.services.memory_writes import memory_add, memory_delete, memory_edit
from tests.memories.conftest import memory_texts, system_prompt_received

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def create_thread(client: AsyncClient) -> str:
    response = await client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201
    return response.json()["id"]


async def send(client: AsyncClient, provider, conversation_id: str, content: str) -> list[str]:
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/?stream=false",
        {"content": content},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["assistant_message"]["status"] == "complete"
    return memory_texts(system_prompt_received(provider))


async def test_thread_a_and_thread_b_example(scripted_provider):
    client = AsyncClient()
    one = await sync_to_async(memory_add)(text="Memory one", category="identity", importance=5)
    two = await sync_to_async(memory_add)(text="Memory two", category="place")

    thread_a = await create_thread(client)
    assert await send(client, scripted_provider, thread_a, "Hello from A.") == ["Memory one", "Memory two"]

    await sync_to_async(memory_add)(text="Memory three")
    thread_b = await create_thread(client)
    assert await send(client, scripted_provider, thread_b, "Hello from B.") == [
        "Memory one", "Memory two", "Memory three",
    ]
    # Thread A keeps its membership: memory 3 does not flow backward.
    assert await send(client, scripted_provider, thread_a, "Still A.") == ["Memory one", "Memory two"]

    await sync_to_async(memory_edit)(memory_id=two.pk, changes={"text": "Memory two, edited"})
    assert await send(client, scripted_provider, thread_a, "A after the edit.") == ["Memory one", "Memory two, edited"]
    assert await send(client, scripted_provider, thread_b, "B after the edit.") == [
        "Memory one", "Memory two, edited", "Memory three",
    ]

    await sync_to_async(memory_delete)(memory_id=one.pk)
    assert await send(client, scripted_provider, thread_a, "A after the delete.") == ["Memory two, edited"]
    assert await send(client, scripted_provider, thread_b, "B after the delete.") == ["Memory two, edited", "Memory three"]
    thread_c = await create_thread(client)
    assert await send(client, scripted_provider, thread_c, "Hello from C.") == ["Memory two, edited", "Memory three"]
