"""The attachment garbage collector: stale uploads and unreferenced blobs go, referenced blobs stay."""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from conversations.services.threads.thread_writes import conversation_create
from elion.base.errors import Conflict
from tests.support.attachment_files import png_bytes
from tests.support.migration_state import apps_at
from transcript.attachments import store
from transcript.attachments.gc import attachment_garbage_collect
from transcript.attachments.upload import attachment_upload
from transcript.models import Attachment, Conversation

pytestmark = pytest.mark.django_db(transaction=True)

GRACE = 3600


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path) -> Path:
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    settings.ELION_ATTACHMENT_GC_GRACE_SECONDS = GRACE
    return settings.ELION_ATTACHMENT_ROOT


def uploaded(name: str, data: bytes) -> Attachment:
    return attachment_upload(upload=SimpleUploadedFile(name, data))


def sent(conversation: Conversation, *attachments: Attachment, content: str = "see attached") -> None:
    send_prepare(SendCommand(
        conversation_id=conversation.id, content=content, attachment_ids=tuple(a.id for a in attachments)
    ))


def age_everything(root: Path, seconds: int = GRACE + 60) -> None:
    """Move every row and file past the grace period."""
    past = timezone.now() - timedelta(seconds=seconds)
    Attachment.objects.update(created_at=past)
    Attachment.objects.exclude(attached_at=None).update(attached_at=past)
    then = time.time() - seconds
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (then, then))


def upload_blob(attachment: Attachment) -> Path:
    return store.blob_path(store.upload_store(), attachment.sha256)


def conversation_blob(conversation: Conversation, attachment: Attachment) -> Path:
    return store.blob_path(store.conversation_store(conversation.id), attachment.sha256)


def test_gc_removes_incomplete_uploads_after_the_grace_period_and_never_a_referenced_blob(attachment_root):
    conversation = conversation_create(persona="elion")
    never_sent = uploaded("draft.txt", b"never sent\n")
    kept = uploaded("photo.png", png_bytes())
    sent(conversation, kept)
    age_everything(attachment_root)

    call_command("collect_attachment_garbage")

    assert not Attachment.objects.filter(pk=never_sent.pk).exists()
    assert not upload_blob(never_sent).exists()
    assert Attachment.objects.filter(pk=kept.pk).exists()
    assert store.read_verified(store.conversation_store(conversation.id), kept.sha256, kept.size) == png_bytes()
    # The committed upload's staging copy is no longer needed once the conversation owns its blob.
    assert not upload_blob(kept).exists()


def test_gc_leaves_everything_younger_than_the_grace_period_alone(attachment_root):
    draft = uploaded("draft.txt", b"still composing\n")
    orphan_store = store.conversation_store(conversation_create(persona="elion").id)
    store.write_bytes(orphan_store, b"imported, not yet committed", "0" * 64)

    report = attachment_garbage_collect()

    assert report.uploads_removed == 0 and report.blobs_removed == 0
    assert Attachment.objects.filter(pk=draft.pk).exists() and upload_blob(draft).exists()
    assert store.blob_path(orphan_store, "0" * 64).exists()


def test_gc_removes_store_blobs_no_durable_message_references(attachment_root):
    conversation = conversation_create(persona="elion")
    kept = uploaded("notes.md", b"# kept\n")
    sent(conversation, kept)
    # An import a rolled-back send left behind, and a stray temporary file of a crashed write.
    store.write_bytes(store.conversation_store(conversation.id), b"rolled back", "a" * 64)
    (attachment_root / "tmp" / "upload-crashed").write_bytes(b"partial")
    age_everything(attachment_root)

    report = attachment_garbage_collect()

    assert report.blobs_removed == 2  # the rolled-back import and the committed upload's staging copy
    assert report.temp_files_removed == 1
    assert not store.blob_path(store.conversation_store(conversation.id), "a" * 64).exists()
    assert conversation_blob(conversation, kept).exists()


def test_gc_collects_a_deleted_conversations_blobs_and_orphaned_rows(attachment_root):
    conversation = conversation_create(persona="elion")
    image = uploaded("photo.png", png_bytes())
    sent(conversation, image)
    Conversation.objects.filter(pk=conversation.pk).delete()
    age_everything(attachment_root)

    report = attachment_garbage_collect()

    assert report.orphan_rows_removed == 1 and not Attachment.objects.filter(pk=image.pk).exists()
    assert not store.conversation_store(conversation.id).exists()


def test_gc_claim_is_conditional_so_a_claimed_upload_is_skipped_and_can_no_longer_be_sent(attachment_root):
    conversation = conversation_create(persona="elion")
    claimed = uploaded("draft.txt", b"claimed by another collector\n")
    age_everything(attachment_root)
    Attachment.objects.filter(pk=claimed.pk).update(gc_claimed_at=timezone.now())  # another cluster's fresh claim

    assert attachment_garbage_collect().uploads_removed == 0
    assert Attachment.objects.filter(pk=claimed.pk).exists()
    with pytest.raises(Conflict) as refused:
        sent(conversation, claimed)
    assert refused.value.code == "attachment_expired"


def test_two_collectors_at_once_remove_each_upload_exactly_once(attachment_root):
    drafts = [uploaded(f"draft-{n}.txt", f"draft {n}\n".encode()) for n in range(12)]
    age_everything(attachment_root)
    reports, errors = [], []
    start = threading.Barrier(2)

    def collect():
        try:
            start.wait()
            reports.append(attachment_garbage_collect())
        except Exception as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=collect) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert sum(report.uploads_removed for report in reports) == len(drafts)
    assert not Attachment.objects.exists()


def test_gc_schedule_is_created_by_the_migration():
    import importlib

    from django_q.models import Schedule

    # Transactional tests flush migration-created rows: apply the (idempotent) data migration again.
    migration = importlib.import_module("conversations.migrations.0005_attachments_and_garbage_collection_schedule")
    migration.add_gc_schedule(apps_at("conversations", "0005_attachments_and_garbage_collection_schedule"), None)
    migration.add_gc_schedule(apps_at("conversations", "0005_attachments_and_garbage_collection_schedule"), None)
    schedule = Schedule.objects.get(name="collect attachment garbage")
    assert schedule.func == "conversations.tasks.collect_attachment_garbage"
    from conversations.tasks import collect_attachment_garbage

    assert set(collect_attachment_garbage()) == {
        "uploads_removed", "orphan_rows_removed", "blobs_removed", "temp_files_removed"
    }


def test_admin_lists_attachments_read_only(client):
    draft = uploaded("listed.md", b"# listed\n")
    listing = client.get("/admin/transcript/attachment/")
    assert listing.status_code == 200 and "listed.md" in listing.content.decode()
    assert client.post(f"/admin/transcript/attachment/{draft.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.post(f"/admin/transcript/attachment/{draft.pk}/change/", {"name": "renamed"}).status_code == 403
    assert Attachment.objects.get(pk=draft.pk).name == "listed.md"
