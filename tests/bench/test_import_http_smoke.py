"""bench/import_http.py runs end to end (Daphne, manage.py qcluster, a tiny export), so it cannot rot.

No timing or memory is asserted: the bench itself fails when an upload or the
start is not a 2xx, a job does not end done with `done` at `total`, progress
goes back, or the documents are not all there; here every shape must have
printed its row and the ratios. Two shapes, one ChatGPT and the Claude.ai one: each starts its own servers
(about ten seconds), and the split members are the same path (tests/archive covers them).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support.live_server import ROOT


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_import_http_bench_imports_a_chatgpt_and_a_claude_export_end_to_end():
    env = {k: v for k, v in os.environ.items() if k != "ELION_SQLITE_PATH"}
    result = subprocess.run(
        [sys.executable, "-m", "bench.import_http", "--megabytes", "0.3", "--shapes", "one,claude"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    database = "PostgreSQL" if os.environ.get("DATABASE_URL") else "SQLite"
    assert f"ORM broker), {database};" in out, out
    for shape in ("ChatGPT, 1 member", "Claude.ai"):
        # shape, JSON MB, zip MB, conversations (at least one), then the figures
        assert re.search(rf"^\s*{re.escape(shape)}\s+[\d.]+\s+[\d.]+\s+[1-9]\d*\s+[\d.]+", out, re.MULTILINE), out
    assert re.search(r"^ratio Claude\.ai / ChatGPT, 1 member: MB/s [\d.]+x", out, re.MULTILINE), out
