"""The send's lock holds no disk I/O (issue 45, item 2): between taking the conversation's row lock and
committing, a send, a retry and a repeated turn only talk to the database.

Every filesystem touch is watched, not only the blob store's: the interpreter's audit events for opening
a file or listing a directory (`open`, which `Path.read_bytes` and imports raise too; `os.listdir`,
`os.scandir`) and every `os.stat` (`Path.stat`, `is_dir`, `exists` go through it). The window opens when
`access_conversation(..., lock=True)` returns and closes when the locked transaction has committed or
rolled back. The send carries an
image and a file, answers a branch whose earlier turn has both, and runs recall (another thread matches),
so every read the compose step needs is there to be made.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from conversations.sending import prepare
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import retry_prepare, send_prepare
from elion.base.errors import Conflict
from tests.support.attachment_files import png_bytes
from transcript import access
from transcript.attachments import store
from transcript.attachments.upload import attachment_upload
from transcript.attachments.verification import AttachmentUnavailable
from transcript.models import Message, MessageStatus, Role

pytestmark = pytest.mark.django_db(transaction=True)

_WATCHED_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})


class LockWindow:
    """Filesystem touches made while a send holds its conversation's row lock (in this thread)."""

    def __init__(self) -> None:
        self.open = False
        self.thread = threading.get_ident()
        self.touches: list[str] = []
        self.locks = 0

    def touched(self, what: str) -> None:
        if self.open and threading.get_ident() == self.thread and connection.in_atomic_block:
            self.touches.append(what)

    def closed(self) -> None:
        self.open = False


_WINDOW: LockWindow | None = None


def _audit(event: str, args: tuple) -> None:
    window = _WINDOW
    if window is not None and event in _WATCHED_EVENTS:
        window.touched(f"{event} {args[0] if args else ''}")


# An audit hook cannot be removed: it is installed once and does nothing outside a test's window.
sys.addaudithook(_audit)


@pytest.fixture
def lock_window(monkeypatch):
    global _WINDOW
    window = LockWindow()
    real_access_row, real_stat = access.access_row, os.stat

    def access_row(*args, lock: bool = False, **kwargs):
        row = real_access_row(*args, lock=lock, **kwargs)
        if lock:
            window.open = True
            window.locks += 1
        return row

    real_commit = prepare._send_commit

    def send_commit(*args, **kwargs):
        """The locked transaction, closing the window once it committed or rolled back."""
        try:
            return real_commit(*args, **kwargs)
        finally:
            window.closed()

    def stat(path, *args, **kwargs):
        window.touched(f"os.stat {path}")
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(access, "access_row", access_row)
    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(prepare, "_send_commit", send_commit)
    _WINDOW = window
    try:
        yield window
    finally:
        _WINDOW = None


def _finish_reply(conversation) -> None:
    conversation.refresh_from_db()
    Message.objects.filter(pk=conversation.head_id).update(
        status=MessageStatus.COMPLETE, content="Noted.", lease_expires_at=None
    )


def _upload(conversation, name: str, data: bytes):
    return attachment_upload(upload=SimpleUploadedFile(name, data), conversation_id=conversation.id)


def test_the_sends_lock_holds_no_filesystem_read(make_conversation, make_turns, lock_window):
    from elion.base.assistant_settings import assistant_settings_get

    assistant_settings_get()
    other = make_conversation(persona="elion", title="Lighthouse")
    make_turns(other, (Role.USER, "The lighthouse garden had foxgloves."), (Role.ASSISTANT, "Purple ones."))
    conversation = make_conversation(persona="elion")
    make_turns(conversation, (Role.USER, "hello"), (Role.ASSISTANT, "hi"))
    first = (_upload(conversation, "dot.png", png_bytes()), _upload(conversation, "notes.txt", b"Foxglove notes."))
    lock_window.open = False
    send_prepare(SendCommand(conversation_id=conversation.id, content="Look at these", attachment_ids=tuple(a.id for a in first)))
    _finish_reply(conversation)
    lock_window.touches.clear()  # the first send may import what it needs: the sends below are measured

    second = (_upload(conversation, "red.png", png_bytes((10, 200, 10))), _upload(conversation, "more.txt", b"More."))
    prepared = send_prepare(
        SendCommand(
            conversation_id=conversation.id,
            content="Do you remember the lighthouse foxgloves?",
            attachment_ids=tuple(a.id for a in second),
        )
    )
    request_text = repr(prepared.request.messages)
    assert "Purple ones" in request_text or "foxgloves." in request_text, "recall ran and found the other thread"
    assert request_text.count("data:image/png") >= 2, "both images, the branch's and the new turn's, were projected"
    _finish_reply(conversation)

    conversation.refresh_from_db()
    retry_prepare(conversation_id=conversation.id, message_id=conversation.head_id)
    _finish_reply(conversation)
    # A repeated client_message_id whose reply failed: the stored turn is answered again.
    client_id = uuid.uuid4()
    third = _upload(conversation, "blue.png", png_bytes((10, 10, 200)))
    command = SendCommand(
        conversation_id=conversation.id, content="And once more", client_message_id=client_id, attachment_ids=(third.id,)
    )
    send_prepare(command)
    conversation.refresh_from_db()
    Message.objects.filter(pk=conversation.head_id).update(status=MessageStatus.FAILED, lease_expires_at=None)
    prepared = send_prepare(command)
    assert prepared.user_message_id == client_id and prepared.request.messages

    assert lock_window.locks == 5
    assert lock_window.touches == [], f"the send touched the filesystem under its lock: {lock_window.touches}"


def test_a_refused_blob_is_refused_without_reading_it_under_the_lock(make_conversation, make_turns, lock_window):
    """A tampered blob on the branch, and a new upload whose bytes are gone: each send is refused (409, naming
    the attachment, nothing written) from what was verified before the lock, not by reading it again in it."""
    conversation = make_conversation(persona="elion")
    make_turns(conversation, (Role.USER, "hello"), (Role.ASSISTANT, "hi"))
    image = _upload(conversation, "dot.png", png_bytes())
    send_prepare(SendCommand(conversation_id=conversation.id, content="Look", attachment_ids=(image.id,)))
    _finish_reply(conversation)
    lock_window.touches.clear()
    before = Message.objects.filter(conversation=conversation).count()

    blob = store.blob_path(store.conversation_store(conversation.id), image.sha256)
    good = blob.read_bytes()
    blob.write_bytes(b"not the image")
    with pytest.raises(AttachmentUnavailable) as refused:
        send_prepare(SendCommand(conversation_id=conversation.id, content="Still there?"))
    assert refused.value.attachment_id == image.id
    conversation.refresh_from_db()
    with pytest.raises(AttachmentUnavailable):
        retry_prepare(conversation_id=conversation.id, message_id=conversation.head_id)
    blob.write_bytes(good)

    gone = _upload(conversation, "gone.png", png_bytes((1, 2, 3)))
    store.blob_path(store.upload_store(), gone.sha256).unlink()
    with pytest.raises(AttachmentUnavailable) as refused:
        send_prepare(SendCommand(conversation_id=conversation.id, content="And this?", attachment_ids=(gone.id,)))
    assert refused.value.attachment_id == gone.id
    assert Message.objects.filter(conversation=conversation).count() == before
    assert lock_window.locks == 4
    assert lock_window.touches == [], f"a refusal read the filesystem under the conversation's lock: {lock_window.touches}"


def test_a_manifest_written_after_the_pre_lock_read_is_read_again_before_the_lock(
    make_conversation, make_turns, monkeypatch, lock_window
):
    """Another writer gives the branch an attachment between the send's pre-lock verification and its lock:
    under the lock the send finds a part it did not verify, lets its transaction go and reads again, whole
    (still no disk under the lock); a writer that does it every time gets 409 `attachments_changed`."""
    from transcript.attachments.manifests import attachments_commit

    conversation = make_conversation(persona="elion")
    user, _ = make_turns(conversation, (Role.USER, "hello"), (Role.ASSISTANT, "hi"))
    real_preverify = prepare.attachments_preverify
    reads: list[bool] = []
    late = _upload(conversation, "late.png", png_bytes((9, 9, 9)))

    def preverify_then_a_writer(**kwargs):
        verified = real_preverify(**kwargs)
        reads.append(kwargs.get("whole", False))
        if len(reads) == 1:  # the other writer, between this read and the lock
            attachments_commit(message=user, attachment_ids=(late.id,))
        return verified

    monkeypatch.setattr(prepare, "attachments_preverify", preverify_then_a_writer)
    prepared = send_prepare(SendCommand(conversation_id=conversation.id, content="What was that?"))
    assert reads == [False, True]
    assert "data:image/png" in repr(prepared.request.messages), "the late image reached the request, verified"
    assert lock_window.touches == []
    _finish_reply(conversation)

    # Two more turns on the branch, each given an attachment by the other writer, one per read.
    u2, _, u3, _ = make_turns(conversation, (Role.USER, "one"), (Role.ASSISTANT, "1"), (Role.USER, "two"), (Role.ASSISTANT, "2"))
    targets = [u2, u3]

    def a_writer_every_time(**kwargs):
        verified = real_preverify(**kwargs)
        target = targets.pop(0)
        attachments_commit(message=target, attachment_ids=(_upload(conversation, "later.png", png_bytes((len(targets), 1, 1))).id,))
        reads.append(kwargs.get("whole", False))
        return verified

    monkeypatch.setattr(prepare, "attachments_preverify", a_writer_every_time)
    before = Message.objects.filter(conversation=conversation).count()
    with pytest.raises(Conflict) as refused:
        send_prepare(SendCommand(conversation_id=conversation.id, content="And now?"))
    assert refused.value.code == "attachments_changed"
    assert reads[-2:] == [False, True]
    assert lock_window.touches == []
    assert Message.objects.filter(conversation=conversation).count() == before
