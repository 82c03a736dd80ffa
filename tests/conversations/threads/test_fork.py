"""Fork: a verified, independent copy of the live branch up to one message."""

from __future__ import annotations

import shutil
import threading
import uuid
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.timezone import now

from continuity.models import ThreadHandoff
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from conversations.services.threads.thread_writes import conversation_create, conversation_rewind
from elion.base.fulltext import search_text_for
from memories.models import ConversationMemorySnapshot, Memory, SnapshotMembership
from memories.services.memory_writes import memory_add
from tests.support.attachment_files import png_bytes
from tests.support.factories import request_for
from tests.support.fork import finish_reply, fork
from transcript.attachments import store
from transcript.attachments.manifests import manifests_for
from transcript.attachments.upload import attachment_upload
from transcript.models import (
    Conversation,
    ConversationOrigin,
    IdempotentAction,
    Message,
    MessageSearchEntry,
    MessageStatus,
    Role,
)
from transcript.provider.binding import binding_fields, configured_provider
from transcript.search_index import message_search_index_sync
from transcript.tree import live_branch, tree_problems

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path) -> Path:
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    return settings.ELION_ATTACHMENT_ROOT


@pytest.fixture
def bound(make_turns):
    """make_turns with the configured provider's binding on every message."""

    def make(conversation, *pairs, parent=None):
        return make_turns(conversation, *pairs, parent=parent, binding=binding_fields(configured_provider()))

    return make


def with_attachments(conversation: Conversation, *files: tuple[str, bytes], content: str = "see") -> list:
    attachments = [attachment_upload(upload=SimpleUploadedFile(name, data)) for name, data in files]
    send_prepare(SendCommand(conversation_id=conversation.id, content=content,
                             attachment_ids=tuple(a.id for a in attachments)))
    finish_reply(conversation)
    return attachments


def test_fork_copies_the_live_branch_only(client, bound):
    source = conversation_create(persona="elion", title="Source")
    q1, a1 = bound(source, ("user", "first question"), ("assistant", "first answer"))
    bound(source, ("user", "abandoned question"), ("assistant", "abandoned answer"))
    Message.objects.filter(conversation=source, content="abandoned answer").update(
        parts=[{"type": "tool_call", "call_id": "c-old", "name": "archive_search", "arguments": {"q": "x"}}]
    )
    conversation_rewind(conversation_id=source.id, message_id=a1.id)
    source.refresh_from_db()
    _, a2 = bound(source, ("user", "second question"), ("assistant", "second answer"))

    response = fork(client, source, a2)
    assert response.status_code == 201, response.content
    destination = Conversation.objects.get(pk=response.json()["id"])
    assert destination.origin == ConversationOrigin.FORK and destination.persona == source.persona
    copied = live_branch(destination)
    assert [(m.role, m.content) for m in copied] == [
        ("user", "first question"), ("assistant", "first answer"),
        ("user", "second question"), ("assistant", "second answer"),
    ]
    assert not Message.objects.filter(conversation=destination, content__startswith="abandoned").exists()
    assert "c-old" not in str(list(Message.objects.filter(conversation=destination).values_list("parts", flat=True)))
    assert [m.metadata["forked_from"] for m in copied][:2] == [str(q1.id), str(a1.id)]
    assert copied[-1].metadata["forked_from"] == str(a2.id)
    assert tree_problems(destination.id, Message.objects.filter(conversation=destination)) == []
    assert {m.binding for m in copied} == {a2.binding}
    # The source is untouched.
    assert Message.objects.filter(conversation=source).count() == 6


def test_fork_up_to_an_earlier_message_stops_there(client, bound):
    source = conversation_create(persona="elion")
    q1, a1, _, _ = bound(source, ("user", "one"), ("assistant", "uno"), ("user", "two"), ("assistant", "dos"))
    response = fork(client, source, q1)
    destination = Conversation.objects.get(pk=response.json()["id"])
    assert [m.content for m in live_branch(destination)] == ["one"]
    messages = client.get(f"/api/conversations/{destination.id}/messages/").json()["results"]
    assert [m["content"] for m in messages] == ["one"]


def test_fork_is_idempotent_by_key(client, bound):
    source = conversation_create(persona="elion")
    _, answer = bound(source, ("user", "q"), ("assistant", "a"))
    first = fork(client, source, answer, key="same")
    again = fork(client, source, answer, key="same")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    other = fork(client, source, answer, key="another")
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    assert Conversation.objects.filter(origin=ConversationOrigin.FORK).count() == 2

    question = Message.objects.get(conversation=source, role=Role.USER)
    reused = fork(client, source, question, key="same")
    assert reused.status_code == 409 and reused.json()["error"] == "idempotency_key_reused"


def test_concurrent_forks_with_one_key_make_one_conversation(bound):
    source = conversation_create(persona="elion")
    _, answer = bound(source, ("user", "q"), ("assistant", "a"))
    results, errors = [], []
    start = threading.Barrier(3)

    def run():
        from conversations.services.threads.fork import conversation_fork

        try:
            start.wait()
            results.append(conversation_fork(conversation_id=source.id, message_id=answer.id, idempotency_key="k"))
        except Exception as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert len({destination.id for destination, _ in results}) == 1
    assert sorted(created for _, created in results) == [False, False, True]
    assert IdempotentAction.objects.filter(action="fork").count() == 1


def test_fork_bad_input_is_a_clear_4xx_and_creates_nothing(client, bound):
    source = conversation_create(persona="elion")
    _, answer = bound(source, ("user", "q"), ("assistant", "a"))
    before = Conversation.objects.count()
    assert fork(client, source, answer, key=None).json()["error"] == "idempotency_key_required"
    assert fork(client, source, "not-a-uuid").json()["error"] == "invalid_message_id"
    unknown = fork(client, source, str(uuid.uuid4()))
    assert unknown.status_code == 404 and unknown.json()["error"] == "message_not_found"
    other = conversation_create(persona="elion")
    (foreign,) = bound(other, ("user", "elsewhere"))
    assert fork(client, source, foreign).status_code == 404
    missing = client.post(f"/api/conversations/{uuid.uuid4()}/fork/", {"message_id": str(answer.id)},
                          content_type="application/json", HTTP_IDEMPOTENCY_KEY="k")
    assert missing.status_code == 404
    assert Conversation.objects.count() == before + 1  # only `other`


def test_fork_refuses_a_rewound_away_message(client, bound):
    source = conversation_create(persona="elion")
    _, a1 = bound(source, ("user", "q1"), ("assistant", "a1"))
    _, abandoned = bound(source, ("user", "q2"), ("assistant", "a2"))
    conversation_rewind(conversation_id=source.id, message_id=a1.id)
    response = fork(client, source, abandoned)
    assert response.status_code == 409 and response.json()["error"] == "fork_target_not_live"


def test_fork_copies_verified_blobs_so_it_survives_the_sources_blobs_being_removed(client, settings):
    source = conversation_create(persona="elion")
    image, notes = with_attachments(source, ("photo.png", png_bytes()), ("notes.md", b"# Notes\n"))
    source.refresh_from_db()
    response = fork(client, source, Message.objects.get(pk=source.head_id))
    destination = Conversation.objects.get(pk=response.json()["id"])

    shutil.rmtree(store.conversation_store(source.id))  # the source's blobs are gone
    store.remove(store.blob_path(store.upload_store(), image.sha256))

    (user_turn,) = [m for m in live_branch(destination) if m.role == Role.USER]
    manifest = manifests_for([user_turn])[user_turn.id]
    assert [a.id for a in manifest] == [image.id, notes.id]  # same attachment identities, same order
    destination_store = store.conversation_store(destination.id)
    assert store.read_verified(destination_store, image.sha256, image.size) == png_bytes()
    request = request_for(destination)  # verifies every blob before projection
    user_content = [m for m in request.messages if m["role"] == "user"][0]["content"]
    assert [part["type"] for part in user_content] == ["text", "image", "text"]
    shown = client.get(f"/api/conversations/{destination.id}/attachments/{image.id}/")
    assert shown.status_code == 200 and shown.content == png_bytes()
    # Nothing of the fork lives in the source's store.
    assert not store.conversation_store(source.id).exists()


def test_fork_with_a_tampered_source_blob_is_blocked_naming_it(client):
    source = conversation_create(persona="elion")
    (notes,) = with_attachments(source, ("notes.md", b"# Notes\n"))
    blob = store.blob_path(store.conversation_store(source.id), notes.sha256)
    blob.chmod(0o644)
    blob.write_bytes(b"# Nope\n\n")
    before = Conversation.objects.count()
    source.refresh_from_db()
    response = fork(client, source, Message.objects.get(pk=source.head_id))
    assert response.status_code == 409
    assert response.json()["error"] == "attachment_tampered" and "notes.md" in response.json()["detail"]
    assert Conversation.objects.count() == before


def test_fork_validates_the_provider_binding_before_publication(client, bound, make_turns, settings):
    drifted = conversation_create(persona="elion")
    _, answer = bound(drifted, ("user", "q"), ("assistant", "a"))
    legacy = conversation_create(persona="elion")
    (_, legacy_answer) = make_turns(legacy, ("user", "q"), ("assistant", "a"), binding={})  # unbound: legacy
    mixed = conversation_create(persona="elion")
    bound(mixed, ("user", "q"))
    other_route = {**binding_fields(configured_provider()), "route_fingerprint": "f" * 32}
    (mixed_answer,) = make_turns(mixed, ("assistant", "a"), binding=other_route)
    before = Conversation.objects.count()

    assert fork(client, legacy, legacy_answer).json()["error"] == "provider_binding_missing"
    assert fork(client, mixed, mixed_answer).json()["error"] == "provider_binding_mixed"
    settings.ELION_MODEL = "another-model"
    response = fork(client, drifted, answer)
    assert response.status_code == 409 and response.json()["error"] == "provider_mismatch"
    assert "openai" in response.json()["detail"]
    assert Conversation.objects.count() == before


def test_fork_after_rotating_only_the_api_key_is_allowed(client, bound, settings):
    settings.OPENAI_API_KEY = "sk-old-key"
    settings.OPENAI_BASE_URL = "https://llm.example.invalid/v1"
    source = conversation_create(persona="elion")
    _, answer = bound(source, ("user", "q"), ("assistant", "a"))
    settings.OPENAI_API_KEY = "sk-rotated-key"
    assert fork(client, source, answer).status_code == 201
    settings.OPENAI_BASE_URL = "https://other.example.invalid/v1"  # route drift fails closed
    assert fork(client, source, answer, key="k2").json()["error"] == "provider_mismatch"


def test_fork_gets_a_memory_snapshot_at_creation(client, bound):
    Memory.objects.create(text="AUMA likes rain")
    source = conversation_create(persona="elion")
    _, answer = bound(source, ("user", "q"), ("assistant", "a"))
    destination_id = fork(client, source, answer).json()["id"]
    assert ConversationMemorySnapshot.objects.filter(conversation_id=destination_id).exists()


def test_fork_of_a_branch_keeps_its_handoff(client, bound):
    from continuity.services.branching import conversation_branch

    source = conversation_create(persona="elion")
    bound(source, ("user", "q"), ("assistant", "a"))
    branch, _ = conversation_branch(conversation_id=source.id, idempotency_key="b")
    branch.refresh_from_db()
    (answer,) = bound(branch, ("assistant", "welcome back"))  # after the unbound handoff bubble
    destination_id = fork(client, branch, answer).json()["id"]
    row = ThreadHandoff.objects.get(destination_id=destination_id)
    assert row.source_id == source.id and row.handoff == ThreadHandoff.objects.get(destination=branch).handoff


def test_delete_forever_removes_the_conversations_blobs_and_a_fork_still_verifies(client):
    """Permanent deletion removes the blobs nothing else references: the
    conversation's own store (a fork holds its own copies, so it keeps working)."""
    from conversations.services.deletion import conversation_delete_forever
    from conversations.services.visibility.transitions import conversation_trash

    source = conversation_create(persona="elion")
    (image,) = with_attachments(source, ("photo.png", png_bytes()))
    source.refresh_from_db()
    destination = Conversation.objects.get(pk=fork(client, source, Message.objects.get(pk=source.head_id)).json()["id"])
    assert store.conversation_store(source.id).is_dir()

    conversation_trash(conversation_id=source.id)
    receipt = conversation_delete_forever(conversation_id=source.id)

    assert receipt.counts["attachment_blobs"] == 1
    assert not store.conversation_store(source.id).exists()
    assert store.read_verified(store.conversation_store(destination.id), image.sha256, image.size) == png_bytes()
    request_for(destination)  # every blob the fork lists still verifies


def test_a_forks_copies_are_searchable_at_once_with_their_originals_tokens(client, bound):
    source = conversation_create(persona="elion")
    question, _ = bound(source, ("user", "Lanterns by the river"), ("assistant", "The lanterns drifted"))
    message_search_index_sync()  # as after each reply
    # Tokens as an earlier tokeniser wrote them: the copy carries these, it is not tokenised again.
    MessageSearchEntry.objects.filter(message=question).update(search_text="lanterns river earlier")
    bound(source, ("user", "Later words, not indexed yet"), ("assistant", "Nor these"))
    source.refresh_from_db()
    destination = Conversation.objects.get(pk=fork(client, source, source.head_id).json()["id"])
    entries = {e.message.metadata["forked_from"]: e for e in
               MessageSearchEntry.objects.filter(conversation=destination).select_related("message")}
    assert len(entries) == 4
    assert entries[str(question.id)].search_text == "lanterns river earlier"
    assert all(e.search_text == search_text_for(e.message.content) for key, e in entries.items() if key != str(question.id))
    assert not MessageSearchEntry.objects.filter(search_text__isnull=True).exists()


def test_a_long_fork_writes_its_copies_in_batches_not_one_statement_each(client, bound):
    source = conversation_create(persona="elion")
    count = 1_200
    bound(source, *[("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(count)])
    message_search_index_sync()
    source.refresh_from_db()
    with CaptureQueriesContext(connection) as queries:
        response = fork(client, source, source.head_id)
    assert response.status_code == 201
    destination = Conversation.objects.get(pk=response.json()["id"])
    assert [m.content for m in live_branch(destination)] == [f"turn {i}" for i in range(count)]
    assert tree_problems(destination.id, Message.objects.filter(conversation=destination)) == []
    assert len(queries) < count / 10, len(queries)


def test_a_forks_copies_keep_every_column_of_their_originals_and_mark_their_source(client, bound):
    source = conversation_create(persona="elion")
    question, answer = bound(source, ("user", "Ünïcode ✓ and \"quotes\"\n"), ("assistant", "A reply with a tool"))
    Message.objects.filter(pk=answer.pk).update(
        parts=[{"type": "tool_call", "call_id": "c1", "name": "archive_search", "arguments": "{\"q\": \"é\"}"}],
        status=MessageStatus.INTERRUPTED, error="stopped", error_detail="Stopped by the owner.", stop_requested_at=now(),
        metadata={"usage": {"input_tokens": 3}, "forked_from": "an older fork's mark", "notes": ["α", None, 1.5]},
    )
    source.refresh_from_db()
    destination = Conversation.objects.get(pk=fork(client, source, answer).json()["id"])
    originals = {m.id: m for m in Message.objects.filter(conversation=source)}
    copies = list(Message.objects.filter(conversation=destination).order_by("seq"))
    assert [c.seq for c in copies] == [1, 2] and copies[0].parent_id is None and copies[1].parent_id == copies[0].id
    assert destination.head_id == copies[1].id and destination.last_seq == 2
    for copy in copies:
        original = originals[uuid.UUID(copy.metadata["forked_from"])]
        for name in ("role", "kind", "content", "parts", "status", "error", "error_detail", "binding"):
            assert getattr(copy, name) == getattr(original, name), name
        assert copy.metadata == {**original.metadata, "forked_from": str(original.id)}
        assert copy.lease_expires_at is None and copy.stop_requested_at is None


def test_a_fork_of_a_private_chat_is_a_private_chat_with_the_same_memory_choice(client, bound):
    memory_add(text="AUMA keeps bees on the roof.")
    for use_memories in (False, True):
        source = conversation_create(persona="elion", private=True, use_memories=use_memories)
        _, answer = bound(source, ("user", "a private question"), ("assistant", "a private answer"))
        response = fork(client, source, answer, key=f"private-{use_memories}")
        assert response.status_code == 201 and response.json()["private"] is True
        assert SnapshotMembership.objects.filter(conversation_id=response.json()["id"]).exists() is use_memories
    ordinary = conversation_create(persona="elion")
    _, answer = bound(ordinary, ("user", "q"), ("assistant", "a"))
    assert fork(client, ordinary, answer, key="ordinary").json()["private"] is False
