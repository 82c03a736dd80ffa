"""A real S3 API on loopback: moto's server mode (`moto_server`) in a subprocess, and a proxy that drops connections.

    with S3Server() as s3:
        s3.client().create_bucket(Bucket="backups")

The fixture `s3_server` (session) starts one and stops it after. boto3 talks
to it over HTTP exactly as to AWS, MinIO or R2: nothing of boto3 is mocked.
`DroppingProxy` forwards TCP to it and, while `drop_after` is set, cuts each
connection abruptly once that many request bytes went through it: the
dropped connection of a flaky network, mid-upload.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.live_server import free_port

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "elion-test", "AWS_SECRET_ACCESS_KEY": "elion-test-secret",
               "AWS_DEFAULT_REGION": "us-east-1"}


class S3Server:
    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> S3Server:
        self.port = free_port()
        binary = shutil.which("moto_server") or str(Path(sys.executable).with_name("moto_server"))
        self.process = subprocess.Popen(
            [binary, "-H", "127.0.0.1", "-p", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("moto_server exited early")
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto_server did not answer on port {self.port}")

    def reset(self) -> None:
        """Every bucket and object gone (moto's own reset endpoint)."""
        request = urllib.request.Request(self.url + "/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class DroppingProxy:
    """TCP on a loopback port to `target_port`; cuts a connection after `drop_after` request bytes while set."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.drop_after: int | None = None
        self.drops = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        self._listener.settimeout(0.2)
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target_port))
        limit = self.drop_after
        sent = 0

        def back() -> None:
            try:
                while data := upstream.recv(65536):
                    client.sendall(data)
            except OSError:
                pass
            finally:
                client.close()

        threading.Thread(target=back, daemon=True).start()
        try:
            while data := client.recv(65536):
                sent += len(data)
                if limit is not None and sent > limit:
                    self.drops += 1
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    break  # an abrupt reset, as a dropped network does
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            client.close()
            upstream.close()

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()


@pytest.fixture(scope="session")
def s3_server():
    with S3Server() as server:
        yield server
