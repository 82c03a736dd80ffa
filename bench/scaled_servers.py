"""The scaled setup the load benches run: Daphne workers on a run of free ports and nginx in front of
them (round robin, the config `scripts/run_scaled.sh nginx-conf` writes), as `make run-scaled` runs them.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.servers import (
    ROOT,
    BenchError,
    wait_for_port,
)


def free_port_run(count: int) -> int:
    """A base port such that base and the next `count` ports are all free on 127.0.0.1."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65000:
            continue
        try:
            sockets = []
            for port in range(base, base + count + 1):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise BenchError("no run of free ports found")


def spawn_daphne(tmp: Path, env: dict[str, str], port: int, name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "elion.asgi:application"],
        cwd=ROOT, env=env, stdout=open(tmp / f"{name}.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )


def spawn_nginx(tmp: Path, env: dict[str, str], base: int, workers: int) -> subprocess.Popen:
    """nginx on 127.0.0.1:base, round robin over Daphne workers on base+1..base+workers, with the
    config `scripts/run_scaled.sh nginx-conf` writes (under env's ELION_DATA_DIR/scaled)."""
    conf_env = {**env, "HOST": "127.0.0.1", "PORT": str(base), "WORKER_PORT_BASE": str(base),
                "ELION_WEB_WORKERS": str(workers)}
    conf = subprocess.run(
        ["bash", "scripts/run_scaled.sh", "nginx-conf"], cwd=ROOT, env=conf_env, check=True,
        capture_output=True, text=True,
    ).stdout.strip().splitlines()[-1]
    run_dir = Path(conf).parent
    return subprocess.Popen(
        ["nginx", "-e", str(run_dir / "nginx-error.log"), "-p", str(run_dir), "-c", conf],
        cwd=ROOT, stdout=open(tmp / "nginx.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )


def start_servers(tmp: Path, env: dict[str, str], workers: int, processes: list) -> tuple[str, str | None]:
    """One Daphne; with workers > 1 also nginx (config from scripts/run_scaled.sh) on a base port
    and that many Daphne workers on base+1..base+workers. Started together, then waited for."""
    if workers > 1 and not shutil.which("nginx"):
        raise BenchError("--workers needs nginx (apt-get install nginx, or run `make run-scaled` once)")
    waits = []
    single = free_port_run(0)
    processes.append(spawn_daphne(tmp, env, single, "daphne"))
    waits.append((single, processes[-1], tmp / "daphne.log"))
    scaled_url = None
    if workers > 1:
        base = free_port_run(workers)
        for i in range(1, workers + 1):
            processes.append(spawn_daphne(tmp, env, base + i, f"daphne-scaled-{i}"))
            waits.append((base + i, processes[-1], tmp / f"daphne-scaled-{i}.log"))
        processes.append(spawn_nginx(tmp, env, base, workers))
        waits.append((base, processes[-1], tmp / "nginx.log"))
        scaled_url = f"http://127.0.0.1:{base}"
    for port, process, log in waits:
        wait_for_port(port, process, log)
    return f"http://127.0.0.1:{single}", scaled_url


def nginx_workers(master: int | None) -> list[int]:
    """The nginx master's children (its worker does the proxying), found through /proc."""
    if master is None:
        return []
    for _ in range(50):
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                    found.append(int(stat.parent.name))
            except (OSError, ValueError, IndexError):
                continue
        if found:
            return found
        time.sleep(0.1)
    return []
