"""Hide racing a first send (issue 6): hidden content never stays in a stored prompt.

Seed: "When a folder is hidden ... affected saved Elion prompts are refreshed
before the operation reports success. That prevents continuity content
captured before the transition from remaining in an existing prompt."

Each operation runs in its own thread and connection and commits for real. On
PostgreSQL this exercises the row locks (`conversations.services.visibility.transitions`: memory-set
lock, then the rows, then the affected threads in id order); on SQLite the
IMMEDIATE write lock serialises whole transactions.
"""

from __future__ import annotations

import random
import threading

import pytest
from django.conf import settings

from continuity.rules import refresh_triggers
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from conversations.services.threads.thread_writes import conversation_create, folder_update
from tests.support.racing import Gate, run_paused, run_together
from transcript.models import Conversation, Folder, Message, Role

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 60 if settings.DATABASE_IS_POSTGRES else 15
WORDS = "the quarantined orchard key"


def linked_pair(make_turns, round_number: int = 0) -> tuple[Folder, Conversation, Conversation]:
    """A source S in a visible folder and a new destination D (no prompt yet) whose handoff is from S."""
    Conversation.objects.update(trashed=True)  # earlier rounds never compete as prior threads
    folder = Folder.objects.create(name=f"Round {round_number}")
    source = conversation_create(folder_id=folder.id)
    make_turns(source, ("user", f"Remember {WORDS}?"), ("assistant", f"Round {round_number}: always."))
    destination = conversation_create()
    assert destination.thread_handoff.source_id == source.id
    return folder, source, destination


def first_send(conversation: Conversation):
    return lambda: send_prepare(SendCommand(conversation_id=conversation.pk, content="first words"))


def hide(folder: Folder):
    return lambda: folder_update(folder_id=folder.pk, changes={"hidden": True})


def stored_prompt(conversation: Conversation) -> str:
    return Message.objects.get(conversation_id=conversation.pk, role=Role.SYSTEM).content


def test_first_send_paused_mid_build_then_hide(monkeypatch, make_turns):
    """The send has read S as eligible and holds D's row; the hide must wait and then rebuild."""
    folder, _source, destination = linked_pair(make_turns)
    gate = Gate()
    gate.install(monkeypatch)
    errors = run_paused(gate, first_send(destination), hide(folder))
    assert not errors
    assert Folder.objects.get(pk=folder.pk).hidden
    assert WORDS not in stored_prompt(destination)


def test_hide_paused_after_rebuild_then_first_send(monkeypatch, make_turns):
    """The hide marks D's prompt stale holding D's row (no prompt yet) until it commits; the send then reads
    S as hidden."""
    folder, _source, destination = linked_pair(make_turns)
    reached, release = threading.Event(), threading.Event()
    real = refresh_triggers.static_prompts_mark_stale

    def paused_mark(conversations):
        real(conversations)
        if threading.current_thread().name == "paused-op":
            reached.set()
            assert release.wait(timeout=30)

    monkeypatch.setattr(refresh_triggers, "static_prompts_mark_stale", paused_mark)

    gate = Gate()
    gate.reached, gate.release = reached, release
    errors = run_paused(gate, hide(folder), first_send(destination))
    assert not errors
    assert WORDS not in stored_prompt(destination)


def test_randomised_hide_and_first_send_interleavings(make_turns):
    rng = random.Random(20261130)
    for round_number in range(ROUNDS):
        folder, source, destination = linked_pair(make_turns, round_number)
        operations = [first_send(destination), hide(folder)]
        if rng.random() < 0.5:
            operations.reverse()
        # Sometimes a second thread with the same handoff sends too.
        other = None
        if rng.random() < 0.5:
            other = conversation_create()
            if other.thread_handoff.source_id == source.id:
                operations.append(first_send(other))
        errors = run_together(operations, jitter=0.006)
        assert not errors, errors
        for conversation in filter(None, (destination, other)):
            prompts = Message.objects.filter(conversation_id=conversation.pk, role=Role.SYSTEM)
            if prompts.exists():
                assert WORDS not in prompts.get().content, f"round {round_number}: hidden content stayed"
