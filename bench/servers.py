"""What the benches share to run the app: the scripted provider and Daphne as processes, the app's
environment, a fresh PostgreSQL database, and the statistics they print.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
MODEL = "gpt-5.5"
API_KEY = "bench-key"
# Where the instrumented server writes its traces, and which candidate fixes it applies (bench.send_hooks).
TRACE_ENV = "ELION_BENCH_TRACE_FILE"
VARIANT_ENV = "ELION_BENCH_VARIANTS"
# Settings the bench pins or clears so the app runs its embedded defaults, unprotected on loopback.
CLEARED_ENV = (
    "DATABASE_URL",
    "ELION_SQLITE_PATH",
    "ELION_OWNER_PASSWORD",
    "ELION_API_TOKEN",
    "ELION_TESTING",
    "DJANGO_DEBUG",
    "REDIS_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ELION_API_SELECTOR",
    "ELION_MODEL",
    "ELION_PROVIDER_ID",
    "ELION_DEPLOYMENT",
    TRACE_ENV,
    VARIANT_ENV,
)


class BenchError(RuntimeError):
    pass


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"process exited early:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"port {port} did not open:\n{log.read_text()[-3000:]}")


def stop_process(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def start_provider(tmp: Path, port: int | None = None) -> tuple[subprocess.Popen, str]:
    """The scripted provider (tests/support/scripted_provider.py) on `port`, or on a free one: (process, base URL)."""
    port = port or free_port()
    log = tmp / "provider.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.scripted_provider", "--port", str(port)],
        cwd=ROOT,
        stdout=open(log, "wb"),  # noqa: SIM115 - lives as long as the process
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port, process, log)
    return process, f"http://127.0.0.1:{port}/v1"


def start_daphne(
    tmp: Path, env: dict[str, str], instrumented: bool, log_name: str = "daphne.log", root: Path = ROOT
) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = tmp / log_name
    app = "bench.send_overhead:instrumented_application" if instrumented else "elion.asgi:application"
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), app],
        cwd=root,
        env=env,
        stdout=open(log, "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port, process, log)
    return process, f"http://127.0.0.1:{port}"


def start_queue_cluster(tmp: Path, env: dict[str, str], log_name: str = "qcluster.log",
                        root: Path = ROOT) -> subprocess.Popen:
    """`manage.py qcluster` in the tree at `root` with `env`, as `make run` starts it beside Daphne."""
    log = tmp / log_name
    return subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=root,
        env=env,
        stdout=open(log, "wb"),  # noqa: SIM115 - lives as long as the process
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_queue_cluster(cluster: subprocess.Popen | None) -> None:
    """The cluster, and its own processes (its sentinel and workers can outlive the parent)."""
    if cluster is None:
        return
    stop_process(cluster)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(cluster.pid, signal.SIGKILL)


def collect_static(root: Path, env: dict[str, str]) -> None:
    """`manage.py collectstatic` in the tree at `root`, into env's data dir: a server without DEBUG (as
    `make run` serves) answers a page only once its hashed static files' manifest is written."""
    done = subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=root, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"collectstatic failed in {root}:\n{done.stderr[-3000:]}")


def pg_server_start() -> tuple[str, str]:
    """A throwaway PostgreSQL server (scripts/pg_tmp.sh): (DATABASE_URL, its dir, for the stop)."""
    out = subprocess.run(["bash", "scripts/pg_tmp.sh", "start"], cwd=ROOT, check=True, capture_output=True, text=True)
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in out.stdout.splitlines() if line.startswith("export ")
    )
    return exports["DATABASE_URL"].strip("'\""), exports["PG_TMP_DIR"].strip("'\"")


@contextlib.contextmanager
def postgres_server(database: str) -> Iterator[str | None]:
    """The PostgreSQL server a bench makes its fresh databases on, when `database` is "postgres":
    DATABASE_URL's server, else a throwaway one (scripts/pg_tmp.sh) stopped on the way out. None for SQLite."""
    if database != "postgres":
        yield None
        return
    server_url, pg_dir = os.environ.get("DATABASE_URL") or None, None
    if not server_url:
        server_url, pg_dir = pg_server_start()
        print(f"started a throwaway PostgreSQL server ({pg_dir})", flush=True)
    try:
        yield server_url
    finally:
        if pg_dir:
            subprocess.run(["bash", "scripts/pg_tmp.sh", "stop", pg_dir], cwd=ROOT, check=False)


def pg_bin(name: str) -> str:
    """A PostgreSQL client program, from the newest server's bin dir (as scripts/pg_tmp.sh finds it)."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), key=lambda p: int(p.parts[-3]))
    if found:
        return str(found[-1])
    if shutil.which(name):
        return name
    raise BenchError(f"{name} not found (apt-get install -y postgresql)")


def pg_dump_file(database_url: str, dump: Path) -> None:
    """The database `database_url` names, written to `dump` (`pg_dump -Fc`: a bench's cached state)."""
    subprocess.run([pg_bin("pg_dump"), "-Fc", "--no-owner", "-f", str(dump), database_url], check=True,
                   capture_output=True)


def pg_restore_file(database_url: str, dump: Path) -> None:
    """A `pg_dump_file` dump restored into the (fresh) database `database_url` names, its statistics taken."""
    subprocess.run([pg_bin("pg_restore"), "--no-owner", "--no-privileges", "-d", database_url, str(dump)],
                   check=True, capture_output=True)
    subprocess.run([pg_bin("psql"), database_url, "-q", "-c", "VACUUM ANALYZE"], check=True, capture_output=True)


def pg_create_database(url: str) -> tuple[str, str | None]:
    """A fresh database on the server DATABASE_URL names; (url to use, name to drop)."""
    import psycopg

    name = f"elion_bench_{os.getpid()}_{secrets.token_hex(3)}"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        print(f"! cannot create a fresh database ({exc}); using DATABASE_URL's database as it is")
        return url, None
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}")), name


def pg_drop_database(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def in_process_bench_close(server_url: str | None, drop: str | None, data_dir: Path | None = None) -> None:
    """The end of an in-process bench: close Django's connections, drop its PostgreSQL database, remove its data dir."""
    from django.db import connections

    connections.close_all()
    if server_url and drop:
        pg_drop_database(server_url, drop)
    if data_dir is not None:
        shutil.rmtree(data_dir, ignore_errors=True)


def app_env(data_dir: Path, database_url: str | None, provider_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env.update(
        ELION_DATA_DIR=str(data_dir),
        DJANGO_SETTINGS_MODULE="elion.settings",
        OPENAI_API_KEY=API_KEY,
        OPENAI_BASE_URL=provider_url,
        ELION_MODEL=MODEL,
        ELION_API_SELECTOR="responses",
        ELION_LOG_LEVEL="WARNING",
        PYTHONDONTWRITEBYTECODE="1",
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    return env
