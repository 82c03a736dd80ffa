"""The pages' banner when no backup was verified in 48 hours while scheduled backups are on (issue 42): the same rule
as `/api/health/`'s `backup.stale` (`elion.web.access.backup_health.backup_stale`), shown on the owner's pages with a link
to Settings → Backups, never when schedules are off or no key and destination are set, and never to a visitor."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from elion.models import BackupRecord, BackupStatus
from tests.support.factories import api_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def backups_on(settings, tmp_path):
    settings.ELION_BACKUP_PASSPHRASE = "the keeper's lamp"
    settings.ELION_BACKUP_RECIPIENTS = ""
    settings.ELION_BACKUP_DIR = str(tmp_path / "backups")
    settings.ELION_BACKUP_S3_BUCKET = ""
    return settings


def banner(client: Client, path: str = "/") -> str | None:
    page = client.get(path)
    assert page.status_code == 200, path
    text = page.content.decode()
    if 'data-testid="backup-banner"' not in text:
        return None
    return text[text.index('data-testid="backup-banner"'):text.index("</div>", text.index('data-testid="backup-banner"'))]


def stale(client: Client) -> bool:
    return api_call(client, "get", "/api/health/")["backup"]["stale"]


def verified(hours_ago: float) -> BackupRecord:
    return BackupRecord.objects.create(status=BackupStatus.VERIFIED, stored=True, encrypted=True,
                                       verified_at=timezone.now() - timedelta(hours=hours_ago))


def test_the_banner_shows_exactly_when_health_says_stale(backups_on):
    client = Client()
    shown = banner(client)
    assert shown is not None and stale(client) is True
    assert "No backup verified in 48 hours" in shown and 'href="/settings/backups/"' in shown
    assert banner(client, "/settings/") is not None, "on every page"

    old = verified(49)
    assert banner(client) is not None and stale(client) is True
    recent = verified(47)
    assert banner(client) is None and stale(client) is False
    recent.delete()
    assert banner(client) is not None and old.pk

    api_call(client, "patch", "/api/settings/", {"backup_schedule": "off"})
    assert banner(client) is None and stale(client) is False, "schedules off: no banner"
    api_call(client, "patch", "/api/settings/", {"backup_schedule": "weekly"})
    assert banner(client) is not None and stale(client) is True


def test_without_a_key_or_a_destination_no_banner_and_no_query_for_it(backups_on):
    backups_on.ELION_BACKUP_PASSPHRASE = ""
    client = Client()
    with CaptureQueriesContext(connection) as queries:
        assert banner(client) is None
    assert not [q["sql"] for q in queries.captured_queries if "elion_backuprecord" in q["sql"]]
    assert stale(client) is False
    backups_on.ELION_BACKUP_PASSPHRASE = "the keeper's lamp"
    backups_on.ELION_BACKUP_DIR = ""
    assert banner(client) is None and stale(client) is False


def test_a_visitor_on_the_login_page_sees_no_banner(backups_on):
    backups_on.ELION_OWNER_PASSWORD = "correct horse"
    backups_on.ELION_PROTECTED = True
    page = Client().get("/login/")
    assert page.status_code == 200 and 'data-testid="backup-banner"' not in page.content.decode()
