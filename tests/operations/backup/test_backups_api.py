"""`/api/backups/`, the backup settings of `/api/settings/` and `backup` in `/api/health/` (issue 42)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django_q.models import Schedule

from conversations import tasks
from elion.models import BackupRecord, BackupStatus
from elion.web.access.backup_health import backup_health
from operations.backup.scheduling import SCHEDULE_NAME
from tests.support.factories import api_call, thread

PASSPHRASE = "keeper of the lamp"


@pytest.fixture
def unconfigured(settings, tmp_path):
    settings.ELION_BACKUP_PASSPHRASE = ""
    settings.ELION_BACKUP_RECIPIENTS = ""
    settings.ELION_BACKUP_DIR = ""
    settings.ELION_BACKUP_S3_BUCKET = ""
    settings.ELION_BACKUP_STAGING_DIR = tmp_path / "staging"
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    return settings


@pytest.fixture
def configured(unconfigured, tmp_path):
    unconfigured.ELION_BACKUP_PASSPHRASE = PASSPHRASE
    unconfigured.ELION_BACKUP_DIR = str(tmp_path / "backups")
    return tmp_path / "backups"


@pytest.mark.django_db
def test_without_a_key_backups_are_refused_with_the_reason_and_health_is_not_stale(unconfigured):
    client = Client()
    listing = api_call(client, "get", "/api/backups/")
    assert listing["results"] == [] and listing["last_verified_at"] is None
    assert listing["schedule"]["running"] is False
    assert "ELION_BACKUP_PASSPHRASE" in listing["schedule"]["refused"]
    response = client.post("/api/backups/")
    assert response.status_code == 409 and response.json()["error"] == "backups_not_configured"
    assert "ELION_BACKUP_PASSPHRASE" in response.json()["detail"]
    health = api_call(client, "get", "/api/health/")
    assert health["backup"] == {"last_verified_at": None, "stale": False}


@pytest.mark.django_db
def test_the_backup_settings_move_the_schedule_and_bad_values_get_a_400(unconfigured):
    client = Client()
    settings_answer = api_call(client, "patch", "/api/settings/", {"backup_schedule": "weekly", "backup_hour": 22})
    assert settings_answer["backup_schedule"] == "weekly" and settings_answer["backup_hour"] == 22
    assert settings_answer["backup_keep_daily"] == 7 and settings_answer["backup_keep_monthly"] == 12
    schedule = Schedule.objects.get(name=SCHEDULE_NAME)
    assert schedule.schedule_type == Schedule.WEEKLY and schedule.repeats == -1
    assert timezone.localtime(schedule.next_run).hour == 22 and schedule.next_run > timezone.now()
    assert schedule.intended_date_kwarg == "slot" and schedule.func == "conversations.tasks.scheduled_backup"
    api_call(client, "patch", "/api/settings/", {"backup_schedule": "off"})
    assert Schedule.objects.get(name=SCHEDULE_NAME).repeats == 0
    for body, code in [
        ({"backup_hour": 24}, "invalid_backup_hour"),
        ({"backup_hour": "3"}, "invalid_backup_hour"),
        ({"backup_hour": True}, "invalid_backup_hour"),
        ({"backup_schedule": "hourly"}, "invalid_backup_schedule"),
        ({"backup_keep_daily": -1}, "invalid_backup_keep_daily"),
        ({"backup_keep_weekly": None}, "invalid_backup_keep_weekly"),
        # One refused setting leaves the others of the same request unsaved.
        ({"backup_hour": 5, "personality": "grumpy"}, "invalid_personality"),
    ]:
        response = client.patch("/api/settings/", body, content_type="application/json")
        assert response.status_code == 400, (body, response.content)
        assert response.json()["error"] == code, body
    assert api_call(client, "get", "/api/settings/")["backup_hour"] == 22


@pytest.mark.django_db
def test_health_is_stale_while_schedules_are_on_and_nothing_was_verified_for_48_hours(configured):
    assert backup_health() == {"last_verified_at": None, "stale": True}
    old = timezone.now() - timedelta(hours=49)
    BackupRecord.objects.create(status=BackupStatus.VERIFIED, verified_at=old, stored=True, created_at=old)
    assert backup_health()["stale"] is True
    BackupRecord.objects.create(status=BackupStatus.VERIFIED, verified_at=timezone.now(), stored=True)
    assert backup_health()["stale"] is False
    api_call(Client(), "patch", "/api/settings/", {"backup_schedule": "off"})
    BackupRecord.objects.all().delete()
    assert backup_health() == {"last_verified_at": None, "stale": False}


@pytest.mark.django_db
def test_unknown_backups_get_404_and_unstored_ones_409(configured):
    client = Client()
    for path in ("/api/backups/00000000-0000-0000-0000-000000000000/verify/",):
        response = client.post(path)
        assert response.status_code == 404 and response.json()["error"] == "backup_not_found"
    response = client.get("/api/backups/00000000-0000-0000-0000-000000000000/download/")
    assert response.status_code == 404
    assert client.get("/api/backups/not-a-uuid/download/").status_code == 404
    running = BackupRecord.objects.create(destination="folder x")
    assert client.post(f"/api/backups/{running.id}/verify/").status_code == 409
    assert client.get(f"/api/backups/{running.id}/download/").status_code == 409


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.django_db(transaction=True)
def test_back_up_now_then_list_download_and_verify_again(configured):
    client = Client()
    thread(("user", "Where does the ferry go?"), ("assistant", "To the island."))
    created = client.post("/api/backups/")
    assert created.status_code == 202, created.content
    backup_id = created.json()["id"]
    assert api_call(client, "get", "/api/backups/")["results"][0]["status"] == "running"
    assert tasks.backup_now(backup_id) == "verified"  # what the queue runs

    listing = api_call(client, "get", "/api/backups/")
    [item] = listing["results"]
    assert item["status"] == "verified" and item["encrypted"] is True
    assert item["destination"] == f"folder {configured}"
    assert item["counts"]["rows"]["transcript.message"] >= 2
    assert listing["last_verified_at"] == item["verified_at"]
    assert api_call(client, "get", "/api/health/")["backup"]["stale"] is False

    download = client.get(f"/api/backups/{backup_id}/download/")
    assert download.status_code == 200 and download.streaming
    data = b"".join(download.streaming_content)
    record = BackupRecord.objects.get(pk=backup_id)
    assert data == (configured / record.key).read_bytes() and len(data) == item["size"]
    assert download["Content-Disposition"] == f'attachment; filename="{record.key}"'

    assert client.post(f"/api/backups/{backup_id}/verify/").status_code == 202
    assert tasks.backup_verify_again(backup_id) == "verified"
    assert BackupRecord.objects.get(pk=backup_id).verified_at > record.verified_at


@pytest.mark.django_db
def test_continuity_cleanup_names_the_newest_verified_backup_beside_the_owners_box(settings):
    from continuity.models import ThreadHandoff
    from transcript.models import Conversation

    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_PROTECTED = True
    client = Client()
    assert client.post("/api/auth/login/", {"password": "correct horse"}, content_type="application/json").status_code == 200
    ThreadHandoff.objects.create(
        source=Conversation.objects.create(), destination=Conversation.objects.create(), summary="retired summary"
    )
    html = client.get("/admin/tools/continuity-cleanup/").content.decode()
    assert "Elion has verified no backup yet" in html
    BackupRecord.objects.create(status=BackupStatus.FAILED, key="failed.zip.age", destination="folder /b", stored=True)
    old = BackupRecord.objects.create(
        status=BackupStatus.VERIFIED, key="older.zip.age", destination="folder /b", stored=True,
        verified_at=timezone.now(), counts={"rows": {}, "blobs": 0}, created_at=timezone.now() - timedelta(days=1),
    )
    newest = BackupRecord.objects.create(
        status=BackupStatus.VERIFIED, key="newest.zip.age", destination="folder /b", stored=True,
        verified_at=timezone.now(), counts={"rows": {}, "blobs": 0},
    )
    html = client.get("/admin/tools/continuity-cleanup/").content.decode()
    assert newest.key in html and old.key not in html and "failed.zip.age" not in html
    # The acknowledgement stays the owner's act: the box is never ticked for them.
    assert '<input type="checkbox" id="backup_verified" name="backup_verified">' in html
