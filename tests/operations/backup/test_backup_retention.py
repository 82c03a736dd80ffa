"""The retention policy (issue 42): keep N daily, N weekly, N monthly; prune only verified backups, never the newest
verified one, and never a running or failed one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from conversations.services.settings_writes import assistant_settings_update
from elion.models import BackupRecord, BackupStatus
from operations.backup.retention import KeepPolicy, backups_prune, current_policy, kept

START = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.get_default_timezone())


def daily_backups(days: int) -> list[tuple[int, datetime]]:
    return [(day, START + timedelta(days=day)) for day in range(days)]


def test_a_year_of_daily_backups_keeps_exactly_seven_daily_four_weekly_and_twelve_monthly():
    backups = daily_backups(400)  # 2026-01-01 … 2027-02-04
    keep = kept(backups, KeepPolicy(daily=7, weekly=4, monthly=12))
    by_id = dict(backups)
    newest = max(by_id.values())
    days = sorted(by_id[i] for i in keep)
    # The 7 newest days...
    assert all(newest - timedelta(days=d) in days for d in range(7))
    # ...the newest backup of each of the 4 newest ISO weeks (3 of them fall inside the 7 days)...
    weeks = {tuple(d.isocalendar()[:2]) for d in days}
    assert len(weeks) >= 4
    # ...and the newest of each of the 12 newest months (the last day of the month, or the newest day of this one).
    months = sorted({(d.year, d.month) for d in days})
    assert len(months) == 12 and months[-1] == (2027, 2) and months[0] == (2026, 3)
    for year, month in months[:-1]:
        last = max(d for d in by_id.values() if (d.year, d.month) == (year, month))
        assert last in days
    expected = 7 + 1 + 11  # 7 daily; one more week's Sunday outside them; 11 month-ends (February is among the daily)
    assert len(keep) == expected, sorted(days)


def test_two_backups_a_day_keep_one_a_day_and_zero_keeps_still_keep_the_newest():
    backups = [(f"{day}-{hour}", START + timedelta(days=day, hours=hour)) for day in range(3) for hour in (0, 12)]
    assert kept(backups, KeepPolicy(daily=3, weekly=0, monthly=0)) == {"0-12", "1-12", "2-12"}
    assert kept(backups, KeepPolicy(daily=0, weekly=0, monthly=0)) == {"2-12"}
    assert kept([], KeepPolicy()) == set()


@pytest.mark.django_db
def test_pruning_deletes_only_verified_files_the_policy_drops(settings, tmp_path):
    folder = tmp_path / "backups"
    folder.mkdir()
    settings.ELION_BACKUP_DIR = str(folder)
    settings.ELION_BACKUP_S3_BUCKET = ""
    destination = f"folder {folder.resolve()}"

    def backup(name: str, days_ago: int, status: str) -> BackupRecord:
        (folder / name).write_bytes(b"age")
        when = timezone.now() - timedelta(days=days_ago)
        return BackupRecord.objects.create(
            key=name, destination=destination, stored=True, status=status, created_at=when,
            verified_at=when if status == BackupStatus.VERIFIED else None,
        )

    newest = backup("new.age", 0, BackupStatus.VERIFIED)
    same_day_older = BackupRecord.objects.create(
        key="older-today.age", destination=destination, stored=True, status=BackupStatus.VERIFIED,
        created_at=newest.created_at - timedelta(minutes=5), verified_at=newest.created_at,
    )
    (folder / "older-today.age").write_bytes(b"age")
    yesterday = backup("yesterday.age", 1, BackupStatus.VERIFIED)
    failed = backup("failed.age", 40, BackupStatus.FAILED)
    running = backup("running.age", 50, BackupStatus.RUNNING)

    pruned = backups_prune(KeepPolicy(daily=1, weekly=0, monthly=0))
    assert {record.pk for record in pruned} == {same_day_older.pk, yesterday.pk}
    assert sorted(path.name for path in folder.iterdir()) == ["failed.age", "new.age", "running.age"]
    assert set(BackupRecord.objects.filter(pruned_at__isnull=True).values_list("pk", flat=True)) == {
        newest.pk, failed.pk, running.pk
    }
    # Nothing left to prune: a second pass deletes nothing.
    assert backups_prune(KeepPolicy(daily=1, weekly=0, monthly=0)) == []


def test_days_weeks_and_months_are_counted_on_the_owners_clock(settings):
    """Two backups on 1 December in UTC fall on one day in Auckland (UTC+13 in summer) with the next one; the
    server's own TIME_ZONE counts for nothing."""
    settings.TIME_ZONE = "America/Los_Angeles"
    backups = [
        ("a", datetime(2026, 12, 1, 10, 0, tzinfo=UTC)),  # Auckland: 1 Dec 23:00
        ("b", datetime(2026, 12, 1, 12, 0, tzinfo=UTC)),  # Auckland: 2 Dec 01:00
        ("c", datetime(2026, 12, 2, 9, 0, tzinfo=UTC)),   # Auckland: 2 Dec 22:00
    ]
    assert kept(backups, KeepPolicy(daily=2, weekly=0, monthly=0, time_zone="UTC")) == {"b", "c"}
    assert kept(backups, KeepPolicy(daily=2, weekly=0, monthly=0, time_zone="Pacific/Auckland")) == {"a", "c"}
    # A month's end: 30 November 20:00 in Los Angeles is already December in UTC.
    month_end = [("nov", datetime(2026, 12, 1, 4, 0, tzinfo=UTC)), ("dec", datetime(2026, 12, 2, 4, 0, tzinfo=UTC))]
    assert kept(month_end, KeepPolicy(daily=0, weekly=0, monthly=2, time_zone="UTC")) == {"dec"}
    assert kept(month_end, KeepPolicy(daily=0, weekly=0, monthly=2, time_zone="America/Los_Angeles")) == {"nov", "dec"}


@pytest.mark.django_db
def test_the_policy_takes_the_owners_time_zone_from_settings():
    assistant_settings_update(time_zone="Pacific/Auckland")
    assert current_policy().time_zone == "Pacific/Auckland"
