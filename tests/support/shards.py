"""Whole test modules dealt to the pytest processes of one database by their measured seconds.

`ELION_TEST_SHARD=k/n` (scripts/test.sh) makes this process run the k-th of n shares. Each module
weighs what `tests/durations.json` recorded for it on this database (setup, call and teardown of its
tests, summed); a module the file does not know weighs its test count times the recorded seconds per
test of the modules it does know. Modules are dealt heaviest first, each to the share that weighs least
so far, so the processes of a database end close together. Every process collecting the same tests
deals them the same way.

`ELION_TEST_DURATIONS_DIR=DIR` makes this process write the seconds of its modules to
`DIR/<database>-<k>.json` at the end; `scripts/test_durations.py` merges those files into
`tests/durations.json` (scripts/test.sh does both with ELION_RECORD_DURATIONS=1).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS_FILE = Path(__file__).resolve().parents[1] / "durations.json"


def module_of(item) -> str:
    return item.nodeid.split("::")[0]


def database_name() -> str:
    """The key of this run's database in the durations file: "sqlite" or "postgresql"."""
    from django.conf import settings

    return "postgresql" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "sqlite"


def recorded_seconds(database: str, path: Path = DURATIONS_FILE) -> dict[str, float]:
    """The recorded seconds per module for `database`; none when the file is missing or unreadable."""
    try:
        return dict(json.loads(path.read_text())["databases"][database])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def module_weights(counts: dict[str, int], recorded: dict[str, float]) -> dict[str, float]:
    """Each module's weight: its recorded seconds, or its test count times the recorded seconds per test."""
    known = [module for module in counts if module in recorded]
    tests_known = sum(counts[module] for module in known)
    per_test = sum(recorded[module] for module in known) / tests_known if tests_known else 1.0
    return {module: recorded.get(module, count * per_test) for module, count in counts.items()}


def deal(weights: dict[str, float], count: int) -> dict[str, int]:
    """Module -> share (0-based): heaviest first, each to the lightest share so far (ties: the name)."""
    loads = [0.0] * count
    owner: dict[str, int] = {}
    for module in sorted(weights, key=lambda name: (-weights[name], name)):
        lightest = loads.index(min(loads))
        owner[module] = lightest
        loads[lightest] += weights[module]
    return owner


def shard_of(items: list, shard: str, recorded: dict[str, float]) -> tuple[list, list]:
    """The items of the k-th of n shares (`shard` is "k/n"), and the rest: (kept, deselected)."""
    index, count = (int(part) for part in shard.split("/"))
    counts: dict[str, int] = defaultdict(int)
    for item in items:
        counts[module_of(item)] += 1
    owner = deal(module_weights(counts, recorded), count)
    kept = [item for item in items if owner[module_of(item)] == index - 1]
    return kept, [item for item in items if owner[module_of(item)] != index - 1]


class DurationRecorder:
    """Sums each module's setup, call and teardown seconds; writes them when the session ends."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.seconds: dict[str, float] = defaultdict(float)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        started = time.perf_counter()
        yield
        self.seconds[module_of(item)] += time.perf_counter() - started

    def pytest_sessionfinish(self, session):
        if not self.seconds:
            return
        shard = os.environ.get("ELION_TEST_SHARD", "1/1").split("/")[0]
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / f"{database_name()}-{shard}.json"
        target.write_text(json.dumps({module: round(s, 2) for module, s in sorted(self.seconds.items())}, indent=1))


def recorder_register(config) -> None:
    """With ELION_TEST_DURATIONS_DIR set, this process records its modules' seconds (tests/conftest.py)."""
    if directory := os.environ.get("ELION_TEST_DURATIONS_DIR"):
        config.pluginmanager.register(DurationRecorder(Path(directory)), "elion-duration-recorder")
