"""Attachments at scale: a blob is hashed once, then trusted while its file identity holds (seed 004).

Rules proved here: a send after the first does not re-hash an unchanged blob;
a blob whose identity changes is re-hashed, and a tampered one still blocks
the send with 409 `attachment_tampered` (a missing one `attachment_missing`);
the daily job and `check_transcripts` re-hash everything and report
tampering, revoking the trust every process placed in it; the encoded cache
is bounded; verifying N blobs costs one identity query per send, not N.
Hash calls are counted at `store.sha256_matches`, the one place blob bytes
are hashed.
"""

from __future__ import annotations

import base64
import importlib
import io
import os
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django_q.models import Schedule

from conversations.sending.commands import SendCommand
from conversations.sending.prepare import retry_prepare, send_prepare
from conversations.services.threads.fork import conversation_fork
from conversations.services.threads.thread_writes import conversation_create
from conversations.services.visibility.transitions import conversation_trash
from conversations.tasks import rehash_attachment_blobs
from elion.base.assistant_settings import assistant_settings_get
from tests.support.attachment_files import png_bytes
from tests.support.migration_state import apps_at
from transcript.attachments import store
from transcript.attachments.encoded_cache import EncodedBlobCache, encoded_blobs
from transcript.attachments.upload import attachment_upload
from transcript.attachments.verification import AttachmentUnavailable, blobs_rehash_all, identities_record
from transcript.models import Attachment, AttachmentBlobIdentity, Conversation, Message, MessageStatus

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = b"# Notes\n\nThe launch moved to Thursday.\n"


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path) -> Path:
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    encoded_blobs.clear()
    yield settings.ELION_ATTACHMENT_ROOT
    encoded_blobs.clear()


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The sha256 of every blob whose bytes were hashed during the test, in order."""
    calls: list[str] = []
    real = store.sha256_matches

    def counting(data: bytes, sha256: str, size: int) -> bool:
        calls.append(sha256)
        return real(data, sha256, size)

    monkeypatch.setattr(store, "sha256_matches", counting)
    return calls


def uploaded(conversation: Conversation, name: str, data: bytes) -> Attachment:
    return attachment_upload(upload=SimpleUploadedFile(name, data), conversation_id=conversation.id)


def images(conversation: Conversation, count: int) -> list[Attachment]:
    return [uploaded(conversation, f"photo-{i}.png", png_bytes(rgb=(i, 40, 200))) for i in range(count)]


def finish_reply(conversation: Conversation) -> None:
    conversation.refresh_from_db()
    Message.objects.filter(pk=conversation.head_id).update(
        status=MessageStatus.COMPLETE, content="ok", lease_expires_at=None
    )


def sent(conversation: Conversation, *attachments: Attachment, content: str = "see attached"):
    prepared = send_prepare(SendCommand(
        conversation_id=conversation.id, content=content, attachment_ids=tuple(a.id for a in attachments)
    ))
    finish_reply(conversation)
    return prepared


def image_urls(prepared) -> list[str]:
    """The image data URLs of a prepared request, in order (either API selector's shape)."""
    urls = []
    for item in prepared.request.messages:
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("type") in ("image", "input_image", "image_url"):
                url = part["image_url"]
                urls.append(url["url"] if isinstance(url, dict) else url)
    return urls


def data_url(data: bytes) -> str:
    return f"data:image/png;base64,{base64.b64encode(data).decode()}"


def blob_of(conversation: Conversation, attachment: Attachment) -> Path:
    return store.blob_path(store.conversation_store(conversation.id), attachment.sha256)


def writable(path: Path) -> Path:
    os.chmod(path, 0o644)
    return path


# --- Sends ----------------------------------------------------------------------------------


def test_a_send_after_the_first_does_not_rehash_an_unchanged_blob(hashed):
    conversation = conversation_create(persona="elion")
    photos = images(conversation, 2)
    notes = uploaded(conversation, "notes.md", NOTES)
    hashed.clear()
    sent(conversation, *photos, notes)
    assert sorted(hashed) == sorted(a.sha256 for a in (*photos, notes))  # each upload, hashed once to import it

    hashed.clear()
    prepared = sent(conversation, content="and now?")
    assert hashed == []
    assert image_urls(prepared) == [data_url(png_bytes(rgb=(i, 40, 200))) for i in range(2)]
    conversation.refresh_from_db()
    retry_prepare(conversation_id=conversation.id, message_id=conversation.head_id)
    assert hashed == []


def test_a_blob_copied_by_a_fork_is_hashed_once_then_trusted(hashed):
    conversation = conversation_create(persona="elion")
    (photo,) = images(conversation, 1)
    sent(conversation, photo)
    conversation.refresh_from_db()
    fork, _ = conversation_fork(
        conversation_id=conversation.id, message_id=conversation.head_id, idempotency_key="fork-once"
    )
    hashed.clear()
    sent(fork, content="in the fork")
    assert hashed == [photo.sha256]  # no identity recorded for the fork's copy yet: the full check
    hashed.clear()
    assert image_urls(sent(fork, content="again")) == [data_url(png_bytes(rgb=(0, 40, 200)))]
    assert hashed == []


def _replace(path: Path, data: bytes) -> None:
    """A new file in place of the old one (a new inode), as a restore or `cp` over it would do."""
    replacement = path.with_name(path.name + ".new")
    replacement.write_bytes(data)
    os.replace(replacement, path)


def _touch_mtime(path: Path, data: bytes) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def _rewrite(path: Path, data: bytes) -> None:
    writable(path).write_bytes(data)


@pytest.mark.parametrize("change", [_rewrite, _touch_mtime, _replace], ids=["rewritten", "touched", "replaced"])
def test_a_blob_whose_identity_changes_is_rehashed_and_still_sends_when_its_bytes_are_sound(hashed, change):
    conversation = conversation_create(persona="elion")
    (photo,) = images(conversation, 1)
    sent(conversation, photo)
    blob = blob_of(conversation, photo)
    change(blob, blob.read_bytes())
    hashed.clear()
    prepared = sent(conversation, content="still there?")
    assert hashed == [photo.sha256]
    assert image_urls(prepared) == [data_url(png_bytes(rgb=(0, 40, 200)))]
    hashed.clear()
    sent(conversation, content="and again?")
    assert hashed == []  # the new identity was recorded


def _same_size_other_bytes(path: Path, data: bytes) -> None:
    writable(path).write_bytes(data[:-4] + b"\x00\x00\x00\x00")


def _same_size_mtime_restored(path: Path, data: bytes) -> None:
    stat = path.stat()
    writable(path).write_bytes(data[:-4] + b"\x00\x00\x00\x00")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ctime still moves: no ordinary call sets it back


def _truncated(path: Path, data: bytes) -> None:
    writable(path).write_bytes(data[: len(data) // 2])


def _replaced_by_other_bytes(path: Path, data: bytes) -> None:
    _replace(path, png_bytes(rgb=(1, 2, 3)))


@pytest.mark.parametrize(
    "tamper",
    [_same_size_other_bytes, _same_size_mtime_restored, _truncated, _replaced_by_other_bytes],
    ids=["same-size", "same-size-mtime-restored", "truncated", "replaced"],
)
def test_a_tampered_blob_whose_identity_changed_blocks_the_send_with_409_attachment_tampered(hashed, tamper):
    conversation = conversation_create(persona="elion")
    (photo,) = images(conversation, 1)
    sent(conversation, photo)
    blob = blob_of(conversation, photo)
    tamper(blob, blob.read_bytes())
    before = Message.objects.filter(conversation=conversation).count()
    hashed.clear()
    with pytest.raises(AttachmentUnavailable) as refused:
        send_prepare(SendCommand(conversation_id=conversation.id, content="what is it?"))
    assert refused.value.status == 409 and refused.value.code == "attachment_tampered"
    assert "photo-0.png" in refused.value.detail
    assert photo.sha256 in hashed
    assert Message.objects.filter(conversation=conversation).count() == before  # nothing committed


def test_a_missing_blob_still_blocks_the_send_with_409_attachment_missing(hashed):
    conversation = conversation_create(persona="elion")
    (photo,) = images(conversation, 1)
    sent(conversation, photo)
    blob_of(conversation, photo).unlink()
    with pytest.raises(AttachmentUnavailable) as refused:
        send_prepare(SendCommand(conversation_id=conversation.id, content="where is it?"))
    assert refused.value.status == 409 and refused.value.code == "attachment_missing"
    conversation.refresh_from_db()
    with pytest.raises(AttachmentUnavailable) as retried:
        retry_prepare(conversation_id=conversation.id, message_id=conversation.head_id)
    assert retried.value.code == "attachment_missing"


# --- The full re-hash -----------------------------------------------------------------------


def _forge_identity(conversation: Conversation, attachment: Attachment) -> None:
    """Tamper with the bytes and put the record in line with the changed file, as an attacker
    who can also set ctime back would leave things: the identity check alone cannot tell."""
    blob = blob_of(conversation, attachment)
    _same_size_other_bytes(blob, blob.read_bytes())
    AttachmentBlobIdentity.objects.filter(conversation=conversation, sha256=attachment.sha256).update(
        file_identity=store.blob_identity(store.conversation_store(conversation.id), attachment.sha256)
    )


def test_the_daily_job_rehashes_every_blob_and_revokes_a_tampered_ones_identity(hashed):
    # Transactional tests flush migration-created rows: apply the (idempotent) data migration again.
    migration = importlib.import_module("conversations.migrations.0011_attachment_blob_identity")
    migration.add_rehash_schedule(apps_at("conversations", "0011_attachment_blob_identity"), None)
    migration.add_rehash_schedule(apps_at("conversations", "0011_attachment_blob_identity"), None)
    schedule = Schedule.objects.get(name="re-hash attachment blobs")
    assert (schedule.func, schedule.schedule_type) == ("conversations.tasks.rehash_attachment_blobs", "D")

    here, there = conversation_create(persona="elion"), conversation_create(persona="elion")
    photos = images(here, 3)
    sent(here, *photos)
    (notes,) = [uploaded(there, "notes.md", NOTES)]
    sent(there, notes)
    _forge_identity(here, photos[1])
    hashed.clear()
    sent(here, content="the forged identity is trusted by a send")
    assert hashed == []

    report = rehash_attachment_blobs()
    assert sorted(hashed) == sorted(a.sha256 for a in (*photos, notes))  # everything, whatever its identity
    assert report == {"blobs_hashed": 4, "bytes_hashed": sum(a.size for a in (*photos, notes)), "problems": 1}
    assert not AttachmentBlobIdentity.objects.filter(conversation=here, sha256=photos[1].sha256).exists()
    with pytest.raises(AttachmentUnavailable) as refused:
        send_prepare(SendCommand(conversation_id=here.id, content="now?"))
    assert refused.value.code == "attachment_tampered" and "photo-1.png" in refused.value.detail
    hashed.clear()
    sent(there, content="the other conversation is unaffected")
    assert hashed == []


def test_the_full_rehash_drops_identities_no_manifest_references_any_more():
    conversation = conversation_create(persona="elion")
    (photo,) = images(conversation, 1)
    sent(conversation, photo)
    identities_record(conversation.id, {"0" * 64: "1:2:3:4:5"})  # a blob the collector removed since
    blobs_rehash_all()
    assert list(AttachmentBlobIdentity.objects.values_list("sha256", flat=True)) == [photo.sha256]


def test_check_transcripts_rehashes_every_blob_and_reports_tampering(hashed):
    conversation = conversation_create(persona="elion")
    photos = images(conversation, 2)
    sent(conversation, *photos)
    out = io.StringIO()
    hashed.clear()
    call_command("check_transcripts", stdout=out)  # sound: exits 0
    assert sorted(hashed) == sorted(a.sha256 for a in photos)
    assert "2 attachment blobs re-hashed" in out.getvalue()

    _forge_identity(conversation, photos[0])
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 transcript problem"):
        call_command("check_transcripts", "--conversation", str(conversation.id), stdout=out)
    assert f"{conversation.id} attachment_tampered: “photo-0.png” (id {photos[0].id})" in out.getvalue()
    blob_of(conversation, photos[1]).unlink()
    out = io.StringIO()
    with pytest.raises(CommandError, match="2 transcript problem"):
        call_command("check_transcripts", stdout=out)
    assert "attachment_missing: “photo-1.png”" in out.getvalue()


# --- The encoded cache --------------------------------------------------------------------


def test_the_encoded_cache_is_bounded_by_bytes_dropping_the_least_recently_used():
    cache = EncodedBlobCache()
    for index in range(5):
        cache.put((f"{index}", "identity", "image/png"), "x" * 100, bound=300)
        assert cache.held_bytes <= 300
    assert len(cache) == 3
    assert cache.get(("2", "identity", "image/png")) is not None  # now the most recently used
    cache.put(("5", "identity", "image/png"), "y" * 100, bound=300)
    assert cache.get(("3", "identity", "image/png")) is None  # the least recently used went
    assert cache.get(("2", "identity", "image/png")) is not None
    cache.put(("big", "identity", "image/png"), "z" * 301, bound=300)
    assert cache.get(("big", "identity", "image/png")) is None and cache.held_bytes == 300


def test_a_send_keeps_the_cache_within_its_bound_and_a_miss_costs_no_hash(settings, hashed):
    longest = max(len(data_url(png_bytes(rgb=(i, 40, 200)))) for i in range(3))
    settings.ELION_ATTACHMENT_ENCODED_CACHE_BYTES = longest * 2  # room for two of the three images
    conversation = conversation_create(persona="elion")
    photos = images(conversation, 3)
    sent(conversation, *photos)
    assert encoded_blobs.held_bytes <= settings.ELION_ATTACHMENT_ENCODED_CACHE_BYTES and len(encoded_blobs) == 2
    hashed.clear()
    prepared = sent(conversation, content="again")
    assert hashed == []  # the evicted image was read and encoded again, not hashed
    assert image_urls(prepared) == [data_url(png_bytes(rgb=(i, 40, 200))) for i in range(3)]
    assert encoded_blobs.held_bytes <= settings.ELION_ATTACHMENT_ENCODED_CACHE_BYTES


# --- Queries ----------------------------------------------------------------------------------


def _send_statements(conversation: Conversation) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        sent(conversation, content="one more")
    return [query["sql"] for query in queries.captured_queries]


def test_verifying_n_attachments_costs_one_identity_query_per_send_not_n():
    assistant_settings_get()
    one, many = conversation_create(persona="elion"), conversation_create(persona="elion")
    sent(one, *images(one, 1))
    sent(many, *images(many, 10))
    sent(many, *[uploaded(many, f"note-{i}.txt", f"note {i}\n".encode()) for i in range(10)])
    sent(one, content="level the turn count")
    few_statements, many_statements = _send_statements(one), _send_statements(many)
    assert len(few_statements) == len(many_statements)
    for statements in (few_statements, many_statements):
        identity = [sql for sql in statements if '"conversations_attachmentblobidentity"' in sql]
        assert len(identity) == 1 and identity[0].startswith("SELECT")


def test_deleting_a_conversation_forever_removes_its_blob_identities():
    conversation, kept = conversation_create(persona="elion"), conversation_create(persona="elion")
    sent(conversation, *images(conversation, 2))
    sent(kept, *images(kept, 1))
    assert AttachmentBlobIdentity.objects.filter(conversation=conversation).count() == 2
    conversation_trash(conversation_id=conversation.id)
    assert Client().delete(f"/api/conversations/{conversation.id}/").json()["state"] == "complete"
    assert not AttachmentBlobIdentity.objects.filter(conversation_id=conversation.id).exists()
    assert AttachmentBlobIdentity.objects.filter(conversation=kept).count() == 1
