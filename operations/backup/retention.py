"""The retention policy: keep N daily, N weekly and N monthly backups (Settings), prune the rest.

As restic's `forget --keep-daily/weekly/monthly`: of the verified backups,
the newest of each of the `backup_keep_daily` most recent days that have
one is kept, and likewise for ISO weeks and calendar months, on the owner's
clock (Settings' `time_zone`, as the backup hour is); one backup may be kept by
several rules. Pruning deletes only
backups that were verified, and never the newest verified one: a running or
failed backup is never pruned (a failed one stays, shown in red, until the
owner deletes it by hand).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from django.utils import timezone

from elion.base.assistant_settings import assistant_settings_read
from elion.models import BackupRecord, BackupStatus
from operations.backup import destinations

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeepPolicy:
    daily: int = 7
    weekly: int = 4
    monthly: int = 12
    # The zone whose days, weeks and months the rules count (an IANA name: the owner's Settings `time_zone`).
    time_zone: str = "UTC"


def _day(local: datetime) -> tuple:
    return local.date().timetuple()[:3]


def _week(local: datetime) -> tuple:
    return tuple(local.date().isocalendar()[:2])


def _month(local: datetime) -> tuple:
    return (local.year, local.month)


def kept(backups: Iterable[tuple[object, datetime]], policy: KeepPolicy) -> set:
    """The ids the policy keeps among `(id, created_at)` of verified backups (the newest always), each backup's
    day, week and month read on the policy's clock."""
    zone = ZoneInfo(policy.time_zone)
    newest_first = sorted(backups, key=lambda item: item[1], reverse=True)
    keep = {newest_first[0][0]} if newest_first else set()
    rules: list[tuple[Callable[[datetime], tuple], int]] = [
        (_day, policy.daily), (_week, policy.weekly), (_month, policy.monthly)
    ]
    for bucket, count in rules:
        seen: set[tuple] = set()
        for backup_id, created_at in newest_first:
            if len(seen) >= count:
                break
            key = bucket(created_at.astimezone(zone))
            if key not in seen:
                seen.add(key)
                keep.add(backup_id)
    return keep


def current_policy() -> KeepPolicy:
    row = assistant_settings_read()
    return KeepPolicy(row.backup_keep_daily, row.backup_keep_weekly, row.backup_keep_monthly, row.time_zone)


def backups_prune(policy: KeepPolicy | None = None) -> list[BackupRecord]:
    """Delete the verified backups the policy does not keep, file first, then mark them pruned; the pruned ones."""
    policy = policy or current_policy()
    verified = list(
        BackupRecord.objects.filter(status=BackupStatus.VERIFIED, stored=True, pruned_at__isnull=True)
    )
    keep = kept(((record.id, record.created_at) for record in verified), policy)
    try:
        destination = destinations.configured_destination()
    except destinations.DestinationProblem:
        return []  # misconfigured: nothing is pruned until it is fixed
    pruned = []
    for record in verified:
        if record.id in keep:
            continue
        if destination is None or destination.description != record.destination:
            continue  # a file at a destination no longer configured: left where it is
        destination.remove(record.key)
        record.pruned_at = timezone.now()
        record.stored = False
        record.save(update_fields=["pruned_at", "stored"])
        pruned.append(record)
        logger.info("backup %s pruned by the retention policy", record.id)
    return pruned
