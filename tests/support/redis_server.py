"""A real redis-server on a free loopback port, in a temporary directory.

    with RedisServer() as redis:
        env = {"REDIS_URL": redis.url}

Or the session-scoped pytest fixture `redis_server` (registered as a plugin
by tests/conftest.py). Nothing is persisted (no RDB, no AOF); the directory
is removed on stop. `scripts/test.sh` installs redis-server with apt-get
when it is missing.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.live_server import free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.directory: Path | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        if not Path(REDIS_SERVER).exists():
            raise RuntimeError("redis-server is missing: apt-get install -y redis-server (scripts/test.sh does this)")
        self.directory = Path(tempfile.mkdtemp(prefix="elion-redis-"))
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.directory),
                "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes",
                "--logfile", str(self.directory / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited early:\n{self.log()}")
            if self.ping():
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer PING on port {self.port}")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def log(self) -> str:
        try:
            return (self.directory / "redis.log").read_text(errors="replace")[-3000:]
        except (OSError, TypeError):
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@pytest.fixture(scope="session")
def redis_server():
    """One redis-server for the session; tests that share it use their own keys or flush it."""
    with RedisServer() as server:
        yield server
