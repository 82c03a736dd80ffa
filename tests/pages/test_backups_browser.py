"""Settings → Backups in the browser (issue 42), desktop and phone: the schedule and retention form, Back up now,
each backup with its status (a failed one in red, with why), its counts, Verify again; and, on a server without
a key, the reason scheduled backups are refused."""

from __future__ import annotations

import pytest
from django.utils import timezone
from django_q.models import OrmQ, Schedule
from playwright.sync_api import Page, expect

from elion.models import BackupRecord, BackupStatus
from operations.backup.scheduling import SCHEDULE_NAME
from tests.pages.conftest import start_daphne, stop_daphne
from tests.support.chat_page import SIZES

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def backups_server(django_db_setup, django_db_blocker, tmp_path_factory):
    backups = tmp_path_factory.mktemp("backups")
    with django_db_blocker.unblock():
        app = start_daphne(
            "backups", {"ELION_BACKUP_PASSPHRASE": "harbour", "ELION_BACKUP_DIR": str(backups)},
            tmp_path_factory.mktemp("daphne-backups"),
        )
    yield app, backups
    stop_daphne(app)


@pytest.fixture
def keyless_server(live_app):
    return live_app


def no_sideways_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.parametrize("size", SIZES)
def test_settings_backups_lists_schedules_and_backs_up_now(transactional_db, backups_server, page: Page, size):
    app, folder = backups_server
    now = timezone.now()
    BackupRecord.objects.create(
        status=BackupStatus.VERIFIED, stored=True, encrypted=True, destination=f"folder {folder}", size=5_242_880,
        key="elion-backup-a.zip.age", verified_at=now, slot=now,
        counts={"rows": {"conversations.message": 4, "conversations.conversation": 2}, "blobs": 3,
                "sample": {"conversation": "x", "messages": 4, "sha256": "0" * 64}},
    )
    BackupRecord.objects.create(
        status=BackupStatus.FAILED, stored=True, encrypted=True, destination=f"folder {folder}", size=100,
        key="elion-backup-b.zip.age", failure="The stored file differs from the one written (size or sha256): it was altered.",
    )
    page.set_viewport_size(SIZES[size])
    page.goto(f"{app.url}/settings/")
    page.locator("[data-backups-link]").click()
    expect(page.locator("[data-backups-refused]")).to_have_count(0)
    expect(page.locator("[data-backups-next]")).to_contain_text("Next backup")

    verified = page.locator('[data-backup-status="verified"]')
    expect(verified).to_contain_text("verified")
    expect(verified).to_contain_text("encrypted")
    expect(verified.locator("[data-backup-counts]")).to_contain_text("3 files matching their checksums")
    expect(verified.locator("[data-backup-counts]")).to_contain_text("4 messages read the same")
    failed = page.locator('[data-backup-status="failed"]')
    expect(failed.locator(".badge-error")).to_have_text("failed")
    expect(failed.locator("[data-backup-failure]")).to_contain_text("it was altered")
    color = failed.locator("[data-backup-failure]").evaluate("el => getComputedStyle(el).color")
    assert color != verified.evaluate("el => getComputedStyle(el).color"), "the failure stands out"
    no_sideways_scroll(page)

    # The schedule: weekly at 22:00, keep 3 daily.
    page.select_option("#backup_schedule", "weekly")
    page.select_option("#backup_hour", "22")
    page.fill("#backup_keep_daily", "3")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".flash-list")).to_contain_text("Backup settings saved")
    schedule = Schedule.objects.get(name=SCHEDULE_NAME)
    assert schedule.schedule_type == Schedule.WEEKLY and timezone.localtime(schedule.next_run).hour == 22
    expect(page.locator("#backup_keep_daily")).to_have_value("3")

    # Verify again queues the verification.
    failed.locator("[data-backup-verify]").click()
    expect(page.locator(".flash-list")).to_contain_text("Verifying again")

    # Back up now: recorded as running and queued for the cluster.
    queued = OrmQ.objects.count()
    page.get_by_role("button", name="Back up now").click()
    expect(page.locator(".flash-list")).to_contain_text("Backing up now")
    expect(page.locator('[data-backup-status="running"]')).to_contain_text("running")
    assert BackupRecord.objects.filter(status=BackupStatus.RUNNING).count() == 1
    assert OrmQ.objects.count() == queued + 1
    no_sideways_scroll(page)
    assert page.js_errors == [] and page.csp_violations == []


@pytest.mark.parametrize("size", SIZES)
def test_without_a_key_the_page_says_why_and_back_up_now_is_off(keyless_server, page: Page, size):
    page.set_viewport_size(SIZES[size])
    page.goto(f"{keyless_server.url}/settings/backups/")
    expect(page.locator("[data-backups-refused]")).to_contain_text("ELION_BACKUP_PASSPHRASE")
    expect(page.get_by_role("button", name="Back up now")).to_be_disabled()
    expect(page.locator("[data-backups-download]")).to_contain_text("unencrypted")
    expect(page.locator("[data-backups-empty]")).to_be_visible()
    no_sideways_scroll(page)
    assert page.js_errors == [] and page.csp_violations == []
