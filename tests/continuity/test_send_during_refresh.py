"""A send made while a Settings save, a memory edit or a memory delete is still rebuilding prompts (issue 40).

Seed 000: "Settings saves still refresh existing Elion prompts"; "Editing a memory: refreshes existing prompts
only for threads whose snapshots already contain that memory ID"; "Deleting a memory: ... rebuilds affected
prompts so the deleted memory cannot linger in stored prompt context"; "The next send uses the resulting
static state."

The operation marks the prompts stale in its transaction, commits, then rebuilds them in batches that read
and build holding no lock (`continuity.rules.prompt_refresh`). Here the operation runs in one thread and is
paused in its first batch's build, after its commit, with the conversation that sorts last (its batch comes
last) still marked; a send into that conversation then runs in a second thread with its own connection and
commits for real. It must run to its end while the operation is paused (nothing of the operation holds a
lock the send needs: a refresh run inside the caller's transaction would hold the Settings save's write lock,
and the send would wait for every batch), and the request it composes must carry the operation's result,
never the stale prompt. SQLite and PostgreSQL alike (`make test-postgres`).
"""

from __future__ import annotations

import pytest
from django.test import Client

from continuity.rules.prompt_store import static_prompt_ensure
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from conversations.services.threads.thread_writes import conversation_create
from memories.models import Memory
from memories.services.memory_writes import memory_add, memory_delete, memory_edit
from tests.support.racing import Gate, run_paused
from transcript.models import Conversation, Message, Role, StalePrompt

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 6
BATCH = 2  # three batches: the last conversation's prompt is still marked while the first batch builds


def settings_save_through_the_api():
    """The Settings form's save (`PATCH /api/settings/`), whose view saves its settings in one transaction."""
    response = Client().patch(
        "/api/settings/", {"custom_instructions": "Answer in riddles."}, content_type="application/json"
    )
    assert response.status_code == 200, response.content


def memory_edited():
    memory_edit(memory_id=Memory.objects.get(text="Loves the sea").pk, changes={"text": "Loves the mountains"})


def memory_deleted():
    memory_delete(memory_id=Memory.objects.get(text="Keeps a secret garden").pk)


# operation, text the send's request must carry afterwards, text it must no longer carry
OPERATIONS = {
    "settings_save": (settings_save_through_the_api, "Answer in riddles.", "Answer plainly."),
    "memory_edit": (memory_edited, "Loves the mountains", "Loves the sea"),
    "memory_delete": (memory_deleted, "Loves the sea", "Keeps a secret garden"),
}


@pytest.mark.parametrize("case", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_a_send_during_the_refresh_runs_through_and_never_composes_with_a_stale_prompt(
    monkeypatch, settings, make_turns, case
):
    operation, carried, gone = case
    settings.ELION_PROMPT_REFRESH_BATCH = BATCH
    Client().patch("/api/settings/", {"custom_instructions": "Answer plainly."}, content_type="application/json")
    memory_add(text="Loves the sea")
    memory_add(text="Keeps a secret garden")
    for i in range(THREADS):
        conversation = conversation_create()
        make_turns(conversation, ("user", f"Hello {i}"), ("assistant", "Hello back."))
        static_prompt_ensure(conversation)
    last = Conversation.objects.order_by("-pk").first()
    assert gone in stored_prompt(last)

    requests: list[str] = []

    def send_into_the_last():
        assert StalePrompt.objects.filter(pk=last.pk).exists(), "the operation committed its marks before its batches"
        prepared = send_prepare(SendCommand(conversation_id=last.pk, content="And now?"))
        requests.append(str(prepared.request))

    gate = Gate()
    gate.install(monkeypatch)
    # second_waits=False: the send must finish while the operation is paused in its batch's build.
    errors = run_paused(gate, operation, send_into_the_last, second_waits=False)
    assert not errors, errors
    (request,) = requests
    assert carried in request and gone not in request
    assert all(carried in text and gone not in text for text in stored_prompts())
    assert not StalePrompt.objects.exists()


def stored_prompt(conversation: Conversation) -> str:
    return Message.objects.get(conversation_id=conversation.pk, role=Role.SYSTEM).content


def stored_prompts() -> list[str]:
    return list(Message.objects.filter(role=Role.SYSTEM).values_list("content", flat=True))
