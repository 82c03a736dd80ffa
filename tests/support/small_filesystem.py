"""A real filesystem that fills up: a tmpfs of a few hundred KiB (mounting needs root, as the test VM runs)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def small_tmpfs(size_kib: int) -> Iterator[Path]:
    mount_point = Path(tempfile.mkdtemp(prefix="elion-full-disk."))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0700", "tmpfs", str(mount_point)],
                   check=True, capture_output=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True, capture_output=True)
        mount_point.rmdir()
