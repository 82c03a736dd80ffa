"""Run the real app under Daphne in a subprocess, against the test database.

Used by tests that need a real server process: crash recovery (SIGKILL),
browser journeys, and benchmarks.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_database_url() -> str:
    """A DATABASE_URL naming the database the current test process uses."""
    cfg = connection.settings_dict
    if cfg["ENGINE"].endswith("sqlite3"):
        return ""  # the subprocess finds the SQLite file through DATABASE_PATH_OVERRIDE
    return f"postgres://{cfg['USER']}:{cfg['PASSWORD']}@{cfg['HOST']}:{cfg['PORT']}/{cfg['NAME']}"


def subprocess_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    cfg = connection.settings_dict
    env.pop("DATABASE_URL", None)
    url = test_database_url()
    if url:
        env["DATABASE_URL"] = url
    else:
        env["ELION_SQLITE_PATH"] = str(cfg["NAME"])
    env.setdefault("ELION_TESTING", "1")
    env.update(extra or {})
    return {k: v for k, v in env.items() if v is not None}


def python_printed(code: str, extra_env: dict[str, str | None] | None = None) -> str:
    """The last line `code` printed, run by this interpreter from the project's root in a process of its own
    with `subprocess_env(extra_env)` (a None value: the variable unset)."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=subprocess_env(extra_env),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


class LiveApp:
    def __init__(self, extra_env: dict[str, str] | None = None):
        self.port = free_port()
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen | None = None
        self.log_path = Path(os.environ.get("ELION_DATA_DIR", "/tmp")) / f"daphne-{self.port}.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> LiveApp:
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "elion.asgi:application"],
            cwd=ROOT,
            env=subprocess_env(self.extra_env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne exited early:\n{self.log_path.read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"daphne did not open port {self.port}:\n{self.log_path.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> LiveApp:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
