"""What a send does while it holds the conversation's lock, and what it does before (seed 004).

Rules: "the user turn is committed before any provider I/O" (asserted by a
durable transaction, not assumed); "verified before every model projection"
(every blob is checked during the send, before the lock: its identity by a stat, its bytes by a hash
when that identity changed); a send's
statement count does not grow with the thread's length.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from conversations.sending.commands import SendCommand
from conversations.sending.prepare import retry_prepare, send_prepare
from tests.support.attachment_files import png_bytes
from transcript.attachments import store
from transcript.attachments.upload import attachment_upload
from transcript.models import Message, MessageStatus, Role

pytestmark = pytest.mark.django_db(transaction=True)


def finish_reply(conversation) -> None:
    conversation.refresh_from_db()
    Message.objects.filter(pk=conversation.head_id).update(status=MessageStatus.COMPLETE, content="ok", lease_expires_at=None)


@pytest.fixture
def blob_reads(monkeypatch):
    """Every look at a blob during the test (a stat of its identity, a read, a hash), with whether a
    transaction (the lock) was open."""
    reads: list[bool] = []

    def recording(real):
        def wrapper(*args, **kwargs):
            reads.append(connection.in_atomic_block)
            return real(*args, **kwargs)

        return wrapper

    for name in ("blob_identity", "read_identified", "sha256_matches"):
        monkeypatch.setattr(store, name, recording(getattr(store, name)))
    return reads


def test_user_turn_committed_before_provider_io_send_prepare_is_a_durable_transaction(make_conversation):
    conversation = make_conversation(persona="elion")
    with pytest.raises(RuntimeError, match="durable"), transaction.atomic():
        send_prepare(SendCommand(conversation_id=conversation.id, content="Hello"))
    assert not Message.objects.filter(conversation=conversation, role=Role.USER).exists()
    prepared = send_prepare(SendCommand(conversation_id=conversation.id, content="Hello"))
    assert not connection.in_atomic_block  # it returned committed
    assert Message.objects.get(pk=prepared.user_message_id).content == "Hello"


def test_attachments_verified_before_projection_blobs_are_read_outside_the_lock(make_conversation, blob_reads):
    conversation = make_conversation(persona="elion")
    upload = attachment_upload(upload=SimpleUploadedFile("dot.png", png_bytes()), conversation_id=conversation.id)
    prepared = send_prepare(SendCommand(conversation_id=conversation.id, content="Look", attachment_ids=(upload.id,)))
    first_send = list(blob_reads)
    assert first_send and not any(first_send)  # the upload was read, hashed and copied before the lock
    image_parts = [p for m in prepared.request.messages for p in (m.get("content") or []) if isinstance(p, dict)]
    assert any(p.get("type") == "image" for p in image_parts)
    finish_reply(conversation)

    blob_reads.clear()
    send_prepare(SendCommand(conversation_id=conversation.id, content="And again?"))
    assert blob_reads and not any(blob_reads)  # the branch's image, checked again for this send, before the lock

    blob_reads.clear()
    finish_reply(conversation)
    conversation.refresh_from_db()
    retry_prepare(conversation_id=conversation.id, message_id=conversation.head_id)
    assert blob_reads and not any(blob_reads)


def test_attachments_verified_before_projection_a_tampered_blob_still_blocks_the_send(make_conversation):
    conversation = make_conversation(persona="elion")
    upload = attachment_upload(upload=SimpleUploadedFile("dot.png", png_bytes()), conversation_id=conversation.id)
    send_prepare(SendCommand(conversation_id=conversation.id, content="Look", attachment_ids=(upload.id,)))
    finish_reply(conversation)
    blob = store.blob_path(store.conversation_store(conversation.id), upload.sha256)
    blob.write_bytes(b"not the image")
    from transcript.attachments.verification import AttachmentUnavailable

    before = Message.objects.filter(conversation=conversation).count()
    with pytest.raises(AttachmentUnavailable):
        send_prepare(SendCommand(conversation_id=conversation.id, content="Still there?"))
    assert Message.objects.filter(conversation=conversation).count() == before  # nothing committed


def _send_statements(conversation, content: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        send_prepare(SendCommand(conversation_id=conversation.id, content=content))
    return [query["sql"] for query in queries.captured_queries]


def test_a_sends_statement_count_does_not_grow_with_thread_length(make_conversation, make_turns):
    from elion.base.assistant_settings import assistant_settings_get

    assistant_settings_get()
    short, long = make_conversation(persona="elion"), make_conversation(persona="elion")
    make_turns(short, *[(Role.USER if i % 2 == 0 else Role.ASSISTANT, f"turn {i}") for i in range(4)])
    make_turns(long, *[(Role.USER if i % 2 == 0 else Role.ASSISTANT, f"turn {i}") for i in range(400)])
    for conversation in (short, long):  # the first send stores the prompt: compare the second
        _send_statements(conversation, "first")
        finish_reply(conversation)
    short_count = len(_send_statements(short, "How are you?"))
    long_count = len(_send_statements(long, "How are you?"))
    assert short_count == long_count


def _recalling_thread(make_conversation, make_turns):
    """A short thread past its birth period, and an older one recall can find for the budget tests' message."""
    from elion.base.assistant_settings import assistant_settings_get

    assistant_settings_get()
    other = make_conversation(persona="elion", title="Lighthouse")
    make_turns(other, (Role.USER, "The lighthouse garden had foxgloves."), (Role.ASSISTANT, "Purple ones."))
    conversation = make_conversation(persona="elion")
    make_turns(conversation, (Role.USER, "hello"), (Role.ASSISTANT, "hi"))
    return conversation


def test_a_whole_send_stays_within_its_statement_budget(make_conversation, make_turns, django_assert_max_num_queries):
    conversation = _recalling_thread(make_conversation, make_turns)
    _send_statements(conversation, "first")  # stores the prompt
    finish_reply(conversation)
    # Recall runs (the other thread matches): the budget covers the whole send, both phases
    # (PostgreSQL's recall asks one more: its rare-term id window).
    with django_assert_max_num_queries(20 if settings.DATABASE_IS_POSTGRES else 19):
        send_prepare(SendCommand(conversation_id=conversation.id, content="Do you remember the lighthouse foxgloves?"))


@pytest.mark.parametrize("ids_far_along", [False, True])
def test_a_first_send_stays_within_its_statement_budget(
    make_conversation, make_turns, django_assert_max_num_queries, ids_far_along
):
    # New Chat continuity gives it a handoff from the Lighthouse thread; past its birth period, recall runs.
    # `ids_far_along`: the search index's ids start high, as in a used database (rows replaced or deleted
    # below them); recall still sees at once that the few rows it may search are all in its first walk.
    if ids_far_along and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT setval(pg_get_serial_sequence('conversations_messagesearchentry', 'id'), 10000000)")
    conversation = _recalling_thread(make_conversation, make_turns)
    # The stored prompt is built too: its handoff row (read once, for recall too), its source's eligibility,
    # live branch and captured messages, the snapshot's memories, the characters, one insert (no savepoint).
    # PostgreSQL's recall asks one more, as in a later send.
    with django_assert_max_num_queries(20 if settings.DATABASE_IS_POSTGRES else 19):
        send_prepare(SendCommand(conversation_id=conversation.id, content="Do you remember the lighthouse foxgloves?"))
    assert Message.objects.filter(conversation=conversation, role=Role.SYSTEM).count() == 1

