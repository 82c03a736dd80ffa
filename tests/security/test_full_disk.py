"""A full disk answers 507 `insufficient_storage`, leaving no partial file (issue "Hardening, round two").

A real Daphne whose attachment store is a 512 KiB tmpfs is sent a 2 MiB
attachment: the write runs out of space (ENOSPC) partway.
"""

from __future__ import annotations

import os

import httpx
import pytest

from tests.support.live_server import LiveApp
from tests.support.small_filesystem import small_tmpfs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _files_under(root) -> list[str]:
    return [os.path.join(d, f) for d, _dirs, files in os.walk(root) for f in files]


def test_a_full_disk_answers_507_insufficient_storage_and_leaves_no_partial_file():
    image = b"\x89PNG\r\n\x1a\n" + os.urandom(2 * 1024 * 1024)
    with small_tmpfs(512) as store, LiveApp({"ELION_ATTACHMENT_ROOT": str(store)}) as app:
        with httpx.Client(base_url=app.base_url, timeout=60) as client:
            response = client.post("/api/attachments/", files={"file": ("big.png", image, "image/png")})
            small = client.post("/api/attachments/", files={"file": ("note.txt", b"still fine", "text/plain")})
        left = _files_under(store)
    assert response.status_code == 507
    assert response.json() == {
        "error": "insufficient_storage",
        "detail": "The disk holding Elion's data is full; nothing was stored. Free some space and try again.",
    }
    assert small.status_code == 201  # what still fits is stored
    assert len(left) == 1 and left[0].endswith(small.json()["sha256"])
