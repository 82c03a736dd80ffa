"""Real django-q2 clusters (`manage.py qcluster` subprocesses) on the test database.

The subprocess finds the test database the way `LiveApp` does (`subprocess_env`):
PostgreSQL through DATABASE_URL, SQLite through ELION_SQLITE_PATH (the shared file).
Without REDIS_URL the cluster uses the ORM broker, so several clusters share one
queue in the database.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.support.live_server import ROOT, subprocess_env

_numbers = itertools.count(1)


class QueueCluster:
    def __init__(self, extra_env: dict[str, str] | None = None):
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen | None = None
        self.log_path = Path(os.environ.get("ELION_DATA_DIR", "/tmp")) / f"qcluster-{os.getpid()}-{next(_numbers)}.log"

    def start(self) -> QueueCluster:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=subprocess_env(self.extra_env),
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=30)
        # The cluster's own processes too (its sentinel can outlive the parent).
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


@contextmanager
def queue_cluster(extra_env: dict[str, str] | None = None):
    """One running cluster for the block."""
    cluster = QueueCluster(extra_env).start()
    try:
        yield cluster.process
    finally:
        cluster.stop()
