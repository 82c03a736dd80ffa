"""Collecting attachment garbage: stale uploads and blobs no durable message references.

Seed 004: "incomplete uploads and committed imports absent from durable
history are collected without removing blobs still referenced by any durable
event in that session." Everything younger than the grace period
(`ELION_ATTACHMENT_GC_GRACE_SECONDS`) is left alone, so an upload about to be
sent, or a blob a send is copying right now, is never touched.

Runs as `manage.py collect_attachment_garbage` and as a django-q2 schedule
(migration 0005). Several clusters may run it at once:
- an uncommitted upload row is claimed with a conditional UPDATE
  (`gc_claimed_at` NULL → now); only the claimant deletes it, and a send can
  no longer commit a claimed row (its claim requires `gc_claimed_at` NULL);
- a conversation store is swept inside a transaction holding the
  conversation's row lock, the lock every send and fork holds while it
  commits a manifest, so "unreferenced" cannot change under the sweep;
- removing a file twice is harmless.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from transcript.attachments import store
from transcript.models import Attachment, Conversation, MessageAttachment, MessageSpeech

# A collector that claimed rows and died leaves them claimed; another may take
# them over after this long.
CLAIM_LEASE = timedelta(minutes=10)


@dataclass
class CollectionReport:
    uploads_removed: int = 0
    orphan_rows_removed: int = 0
    blobs_removed: int = 0
    temp_files_removed: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def attachment_garbage_collect(*, grace_seconds: int | None = None) -> CollectionReport:
    grace = settings.ELION_ATTACHMENT_GC_GRACE_SECONDS if grace_seconds is None else grace_seconds
    report = CollectionReport()
    now = timezone.now()
    cutoff = now - timedelta(seconds=grace)
    report.uploads_removed = _collect_uncommitted_uploads(cutoff, now)
    report.orphan_rows_removed = _collect_orphan_rows(cutoff)
    report.blobs_removed = _sweep_upload_store(grace) + _sweep_conversation_stores(grace)
    report.temp_files_removed = _sweep_temp(grace)
    return report


def _collect_uncommitted_uploads(cutoff: datetime, now: datetime) -> int:
    """Uploads never committed to a message, older than the grace period."""
    removed = 0
    stale_claim = now - CLAIM_LEASE
    candidates = Attachment.objects.filter(attached_at__isnull=True, created_at__lt=cutoff).values_list(
        "pk", "gc_claimed_at"
    )
    for pk, claimed_at in list(candidates):
        if claimed_at is not None and claimed_at > stale_claim:
            continue  # another collector is on it
        # The claim: only the collector whose UPDATE matched the row as it
        # read it proceeds; a send that committed meanwhile set attached_at.
        won = Attachment.objects.filter(pk=pk, attached_at__isnull=True, gc_claimed_at=claimed_at).update(
            gc_claimed_at=now
        )
        if won != 1:
            continue
        deleted, _ = Attachment.objects.filter(pk=pk, gc_claimed_at=now, attached_at__isnull=True).delete()
        removed += 1 if deleted else 0
    return removed


def _collect_orphan_rows(cutoff: datetime) -> int:
    """Committed attachments whose every referencing message is gone (a deleted conversation)."""
    orphans = Attachment.objects.filter(attached_at__lt=cutoff, manifest_entries__isnull=True)
    removed = 0
    for pk in list(orphans.values_list("pk", flat=True)):
        with transaction.atomic():
            # Re-checked inside the delete's transaction; PROTECT on the
            # manifest's foreign key refuses the delete if a fork just listed it.
            if MessageAttachment.objects.filter(attachment_id=pk).exists():
                continue
            deleted, _ = Attachment.objects.filter(pk=pk).delete()
            removed += 1 if deleted else 0
    return removed


def _sweep_upload_store(grace: int) -> int:
    """Upload-store blobs no uncommitted upload row still names."""
    pending = set(Attachment.objects.filter(attached_at__isnull=True).values_list("sha256", flat=True))
    removed = 0
    now = time.time()
    for sha, path in list(store.blobs_in(store.upload_store())):
        if sha in pending or not store.older_than(path, grace, now):
            continue
        removed += store.remove(path)
    return removed


def _sweep_conversation_stores(grace: int) -> int:
    """Conversation-store blobs no message of that conversation lists (as an attachment or its speech)."""
    removed = 0
    now = time.time()
    for conversation_id, directory in list(store.conversation_stores()):
        old = [(sha, path) for sha, path in store.blobs_in(directory) if store.older_than(path, grace, now)]
        if not old:
            continue
        with transaction.atomic():
            # The conversation's row lock: the one every send and fork holds
            # while it copies a blob in and commits the manifest naming it.
            Conversation.objects.select_for_update().filter(pk=conversation_id).first()
            referenced = set(
                MessageAttachment.objects.filter(conversation_id=conversation_id).values_list(
                    "attachment__sha256", flat=True
                )
            )
            # A reply's kept speech (issue 43) lives in the same store; a deleted message's rows are gone.
            referenced |= set(MessageSpeech.objects.filter(conversation_id=conversation_id).values_list("sha256", flat=True))
            for sha, path in old:
                if sha not in referenced and store.older_than(path, grace, now):
                    removed += store.remove(path)
            with contextlib.suppress(OSError):
                directory.rmdir()  # only when the store is now empty
    return removed


def _sweep_temp(grace: int) -> int:
    """Temporary files of writes a crash interrupted."""
    temp = store.root() / "tmp"
    if not temp.is_dir():
        return 0
    now = time.time()
    removed = 0
    for path in list(temp.iterdir()):
        if store.older_than(path, grace, now):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
    return removed
