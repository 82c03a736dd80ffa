"""Backups to an S3-compatible bucket: boto3 against moto's server on loopback (a real S3 API; boto3 unmocked).

Multipart above 8 MiB; a partial upload never counts as a backup; a dropped
connection either recovers (botocore retries the part) or fails the backup
cleanly, with no object and no multipart upload left open, and the next
backup succeeds.
"""

from __future__ import annotations

import hashlib
import os
import uuid

import boto3
import pytest

from elion.models import BackupRecord, BackupStatus
from operations.backup import destinations, encryption, runs
from tests.support.factories import thread
from tests.support.s3_server import CREDENTIALS, DroppingProxy, s3_server  # noqa: F401 - the fixture
from transcript.attachments import store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
PASSPHRASE = "harbour lights"


@pytest.fixture
def bucket(s3_server, settings, tmp_path, monkeypatch):  # noqa: F811 - the fixture
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    name = f"elion-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=s3_server.url).create_bucket(Bucket=name)
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    settings.ELION_BACKUP_STAGING_DIR = tmp_path / "staging"
    settings.ELION_BACKUP_PASSPHRASE = PASSPHRASE
    settings.ELION_BACKUP_RECIPIENTS = ""
    settings.ELION_BACKUP_DIR = ""
    settings.ELION_BACKUP_S3_URL = s3_server.url
    settings.ELION_BACKUP_S3_BUCKET = name
    settings.ELION_BACKUP_S3_PREFIX = "nightly"
    return name


def client(url: str):
    return boto3.client("s3", endpoint_url=url)


def big_instance(megabytes: int = 10) -> None:
    conversation = thread(("user", "The ferry timetable, please."), ("assistant", "Dawn and dusk."))
    data = os.urandom(megabytes << 20)  # incompressible: the encrypted file is over the multipart threshold
    store.write_bytes(store.conversation_store(conversation.pk), data, hashlib.sha256(data).hexdigest())


@pytest.mark.django_db(transaction=True)
def test_a_large_backup_goes_up_in_parts_and_is_verified_from_the_bucket(bucket, s3_server, tmp_path):  # noqa: F811
    big_instance()
    record = runs.backup_run(runs.backup_start())
    assert record.status == BackupStatus.VERIFIED, record.failure
    assert record.destination == f"s3://{bucket}/nightly/"
    head = client(s3_server.url).head_object(Bucket=bucket, Key="nightly/" + record.key)
    assert head["ContentLength"] == record.size > destinations.MULTIPART_BYTES
    assert "-" in head["ETag"], "an ETag of a multipart upload ends in -<parts>"
    assert record.counts["blobs"] == 1 and record.counts["restored_from"] == "the stored file, decrypted"
    # What is in the bucket opens with the passphrase alone.
    fetched = tmp_path / "fetched.age"
    client(s3_server.url).download_file(bucket, "nightly/" + record.key, str(fetched))
    encryption.decrypt_file(fetched, tmp_path / "opened.zip", passphrase=PASSPHRASE)


@pytest.mark.django_db(transaction=True)
def test_a_dropped_connection_is_retried_and_a_lasting_one_leaves_no_backup_and_no_open_upload(
    bucket, s3_server, settings  # noqa: F811
):
    big_instance()
    proxy = DroppingProxy(s3_server.port)
    settings.ELION_BACKUP_S3_URL = proxy.url
    try:
        # One drop, mid-upload: botocore retries the part; the backup is stored whole and verified.
        proxy.drop_after = 3 << 20
        record = runs.backup_start()
        # Heal after the first drop, as a flaky network does.
        original = proxy._serve

        def serve_once(client_socket):
            original(client_socket)
            if proxy.drops:
                proxy.drop_after = None

        proxy._serve = serve_once
        record = runs.backup_run(record)
        assert proxy.drops >= 1
        assert record.status == BackupStatus.VERIFIED, record.failure

        # Every connection dropped: the retries give up, the backup fails and counts for nothing.
        proxy._serve = original
        proxy.drop_after = 1 << 20
        failed = runs.backup_run(runs.backup_start())
        assert failed.status == BackupStatus.FAILED and not failed.stored
        assert "Could not upload" in failed.failure
        s3 = client(s3_server.url)
        keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        assert keys == ["nightly/" + record.key], "the failed upload left no object"
        assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads"), "and no multipart upload open"

        # The network back: the next backup starts afresh and succeeds.
        proxy.drop_after = None
        again = runs.backup_run(runs.backup_start())
        assert again.status == BackupStatus.VERIFIED, again.failure
    finally:
        proxy.stop()
    # Both verified on one day: the retention policy (one a day) pruned the older one's file.
    assert BackupRecord.objects.filter(status=BackupStatus.VERIFIED).count() == 2
    assert list(BackupRecord.objects.filter(stored=True).values_list("pk", flat=True)) == [again.pk]


@pytest.mark.django_db(transaction=True)
def test_a_multipart_upload_left_open_by_a_dead_process_is_aborted_before_the_next_backup(bucket, s3_server):  # noqa: F811
    s3 = client(s3_server.url)
    s3.create_multipart_upload(Bucket=bucket, Key="nightly/elion-backup-half.zip.age")
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads")
    thread(("user", "hello"))
    record = runs.backup_run(runs.backup_start())
    assert record.status == BackupStatus.VERIFIED, record.failure
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")
