"""Settings → Backups in the browser (issue 42), desktop and phone: the schedule and retention form, Back up now,
each backup with its status (a failed one in red, with why), its counts, Verify again; on a server without
a key, the reason scheduled backups are refused; the 48-hour banner; and a restore over the instance in use
(a wrong word refused, the word replace restores through a real django-q2 cluster, the page shows the outcome)."""

from __future__ import annotations

import hashlib
import shutil

import pytest
from django.conf import settings
from django.utils import timezone
from django_q.models import OrmQ, Schedule
from playwright.sync_api import Page, expect

from elion.models import BackupRecord, BackupStatus
from operations.backup import destinations, encryption
from operations.backup.scheduling import SCHEDULE_NAME
from operations.backup.writing import backup_chunks
from tests.pages.conftest import start_daphne, stop_daphne
from tests.support.chat_page import SIZES
from tests.support.factories import thread
from tests.support.queue_cluster import QueueCluster
from transcript.attachments import store
from transcript.models import Conversation

PASSPHRASE = "harbour"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def backups_server(django_db_setup, django_db_blocker, tmp_path_factory):
    backups = tmp_path_factory.mktemp("backups")
    with django_db_blocker.unblock():
        app = start_daphne(
            "backups", {"ELION_BACKUP_PASSPHRASE": PASSPHRASE, "ELION_BACKUP_DIR": str(backups)},
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
        counts={"rows": {"transcript.message": 4, "transcript.conversation": 2}, "blobs": 3,
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


@pytest.fixture
def served_like_the_server(backups_server, settings, tmp_path):
    """The test process configured like the backups server (its key and folder), with the served attachment store
    set aside: a restore over the instance removes every blob the backup does not hold."""
    app, folder = backups_server
    settings.ELION_BACKUP_PASSPHRASE = PASSPHRASE
    settings.ELION_BACKUP_DIR = str(folder)
    root, aside = store.root(), tmp_path / "attachments-aside"
    if root.exists():
        shutil.move(root, aside)
    yield app, folder
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(settings.DATA_DIR / "before-restore", ignore_errors=True)
    if aside.exists():
        shutil.move(aside, root)


def stored_backup(tmp_path) -> BackupRecord:
    """This instance backed up, encrypted with the server's passphrase, stored in its folder, and verified."""
    plain, sealed = tmp_path / "backup.zip", tmp_path / "backup.zip.age"
    plain.write_bytes(b"".join(backup_chunks()))
    with sealed.open("wb") as out:
        encryption.encrypt_stream(iter([plain.read_bytes()]), out, encryption.configured_keys())
    destination = destinations.configured_destination()
    key = f"elion-backup-{tmp_path.name}.zip.age"
    return BackupRecord.objects.create(
        status=BackupStatus.VERIFIED, stored=True, encrypted=True, destination=destination.description, key=key,
        size=destination.store(sealed, key), sha256=hashlib.sha256(sealed.read_bytes()).hexdigest(),
        verified_at=timezone.now(), counts={"rows": {"transcript.conversation": 1, "transcript.message": 2}, "blobs": 0},
    )


@pytest.mark.timeout(600)
@pytest.mark.parametrize("size", SIZES)
def test_the_stale_banner_and_a_restore_over_the_instance_with_the_typed_word(
    transactional_db, served_like_the_server, page: Page, size, tmp_path
):
    app, _folder = served_like_the_server
    page.set_viewport_size(SIZES[size])
    thread(("user", "the lighthouse at dusk"), ("assistant", "the lamp is lit"), title="Lighthouse")

    # Schedules on, nothing verified yet: the banner, on every page, links to Settings → Backups.
    page.goto(f"{app.url}/")
    banner = page.get_by_test_id("backup-banner")
    expect(banner).to_contain_text("No backup verified in 48 hours")
    page.locator("[data-backup-banner-link]").click()
    page.wait_for_url(f"{app.url}/settings/backups/")
    no_sideways_scroll(page)

    record = stored_backup(tmp_path)
    thread(("user", "the ferry at dawn"), ("assistant", "the keeper waves"), title="Harbour")
    page.reload()
    expect(page.get_by_test_id("backup-banner")).to_have_count(0)  # a backup verified now

    page.locator(f'[data-backup] a[href="/settings/backups/{record.id}/restore/"]').click()
    expect(page.locator("[data-restore-current]")).to_contain_text("This instance holds 2 conversations, 4 messages")
    expect(page.locator("[data-restore-backup]")).to_contain_text("It holds 1 conversation, 2 messages")
    assert "conversations." not in page.locator("main").inner_text(), "no table names"
    confirm = page.get_by_label("To confirm, type the word replace")
    confirm.fill("yes")
    page.get_by_role("button", name="Replace everything with this backup").click()
    expect(page.locator("[data-restore-error]")).to_contain_text("must be the word replace; nothing was changed")
    assert sorted(Conversation.objects.values_list("title", flat=True)) == ["Harbour", "Lighthouse"]
    no_sideways_scroll(page)

    cluster = QueueCluster({"ELION_DATA_DIR": str(settings.DATA_DIR), "ELION_BACKUP_PASSPHRASE": PASSPHRASE,
                            "ELION_BACKUP_DIR": settings.ELION_BACKUP_DIR}).start()
    try:
        page.get_by_label("To confirm, type the word replace").fill("replace")
        page.get_by_role("button", name="Replace everything with this backup").click()
        expect(page.locator("[data-restore-source]")).to_contain_text("which holds 1 conversation, 2 messages")
        outcome = page.locator('[data-restore-outcome="done"]')
        try:
            expect(outcome).to_contain_text("Restored.", timeout=300_000)
        except AssertionError as exc:
            raise AssertionError(f"{app.log()[-2000:]}\n{cluster.log()[-3000:]}") from exc
    finally:
        cluster.stop()
    expect(outcome).to_contain_text("now holds 1 conversation, 2 messages")
    expect(outcome).to_contain_text("You are still signed in")
    expect(page.locator("[data-restore-progress]")).to_contain_text("The state before the restore was backed up")
    assert list(Conversation.objects.values_list("title", flat=True)) == ["Lighthouse"]
    no_sideways_scroll(page)
    page.goto(f"{app.url}/")
    expect(page.get_by_text("Lighthouse").first).to_be_attached()
    expect(page.get_by_test_id("backup-banner")).to_have_count(0)
    assert page.js_errors == [] and page.csp_violations == []
