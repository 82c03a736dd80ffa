"""bench/load.py runs end to end (3 clients, one worker and nginx -> two), so it cannot rot.

No timing is asserted: only that every side streamed every delta of every reply
and that each send reached the provider exactly once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.support.live_server import ROOT


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_load_bench_runs_end_to_end_with_three_clients_and_two_workers():
    # scripts/test.sh installs nginx; a missing one is a broken setup, not a reason to pass quietly.
    assert shutil.which("nginx"), "nginx is not installed: apt-get install -y nginx (scripts/test.sh does this)"
    env = {k: v for k, v in os.environ.items() if k != "ELION_SQLITE_PATH"}
    result = subprocess.run(
        [sys.executable, "-m", "bench.load", "--clients", "3", "--rounds", "1", "--warmup", "0",
         "--chunks", "3", "--chunk-delay", "0", "--workers", "2"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=220,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for side in ("direct", "app, 1 Daphne (WebSocket)", "nginx -> 2 Daphne (WebSocket)"):
        assert re.search(rf"^{re.escape(side)}\s+[\d.]+", out, re.MULTILINE), out
    assert re.search(r"^throughput ratio nginx -> 2 Daphne .*: [\d.]+ \(deltas/s\)", out, re.MULTILINE), out
    # Three sides × three clients × one send, each one provider request.
    assert "provider requests: 9 (9 sends in all" in out, out
