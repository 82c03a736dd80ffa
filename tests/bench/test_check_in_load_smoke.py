"""bench/check_in_load.py runs end to end (the scripted provider, Daphne, `manage.py qcluster`, a few check-ins),
so it cannot rot. No timing is asserted: the bench itself fails when a send does not stream, the cluster stops,
or any check-in is not run exactly once; here its rows and the exactly-once line must be printed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.live_server import ROOT


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_check_in_load_bench_runs_a_few_check_ins_exactly_once():
    env = {k: v for k, v in os.environ.items() if k != "ELION_SQLITE_PATH"}
    result = subprocess.run(
        [sys.executable, "-m", "bench.check_in_load", "--count", "4", "--sends", "1", "--gap", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "| idle (no check-in due) |" in out and "| 4 check-ins running |" in out, out
    assert "ratio busy / idle: " in out and "every check-in exactly once: yes" in out, out
