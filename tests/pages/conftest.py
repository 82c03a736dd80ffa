"""Browser fixtures: a real Daphne serving the test database, and chromium.

pytest-django gives each run its own test database; the Daphne subprocess is
pointed at that same database (`DATABASE_URL` built from the live connection
settings), so a browser journey and the ORM assertions in the test see the
same rows. Tests using `live_app` run with `transactional_db`: their writes
are committed, so the other process can read them, and the tables are
flushed afterwards.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.conftest import CHROMIUM_ARGS
from tests.support.browser_waits import WAIT_MS

# Every `expect` and every page action waits up to WAIT_MS (tests/support/browser_waits.py).
expect.set_options(timeout=WAIT_MS)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
OWNER_PASSWORD = "correct horse battery staple"
OWNER_API_TOKEN = "proof-script-token"
# Variables the parent may carry that would change what the server does.
_SCRUBBED = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ELION_OWNER_PASSWORD", "ELION_API_TOKEN", "DATABASE_URL",
             "ELION_MODEL", "ELION_API_SELECTOR", "ELION_PROVIDER_ID", "ELION_DEPLOYMENT", "REDIS_URL",
             "DJANGO_ALLOW_ASYNC_UNSAFE")


def database_url_for(settings_dict: dict) -> str:
    """A DATABASE_URL naming the database `settings_dict` is connected to."""
    engine = settings_dict["ENGINE"]
    if engine.endswith("sqlite3"):
        name = str(settings_dict["NAME"])
        if not name or name == ":memory:" or "mode=memory" in name:
            raise RuntimeError("browser tests need a file-backed SQLite test database")
        # Same busy-timeout and write-lock behaviour as the app's own SQLite settings.
        return f"sqlite:///{Path(name).resolve()}?timeout=20&transaction_mode=IMMEDIATE"
    if engine.endswith("postgresql"):
        user = quote(str(settings_dict.get("USER") or ""), safe="")
        password = quote(str(settings_dict.get("PASSWORD") or ""), safe="")
        credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = settings_dict.get("PORT") or 5432
        return f"postgres://{credentials}{host}:{port}/{quote(str(settings_dict['NAME']), safe='')}"
    raise RuntimeError(f"no DATABASE_URL form for {engine}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveApp:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def start_daphne(name: str, extra_env: dict[str, str], tmp_dir: Path) -> LiveApp:
    from django.conf import settings
    from django.db import connection

    port = _free_port()
    env = {key: value for key, value in os.environ.items() if key not in _SCRUBBED}
    env.update(
        DATABASE_URL=database_url_for(connection.settings_dict),
        ELION_DATA_DIR=str(settings.DATA_DIR),
        ELION_TESTING="1",
        DJANGO_SETTINGS_MODULE="elion.settings",
        PYTHONUNBUFFERED="1",
        # Stale-stream detection stays fast enough for a test, slow enough for a stream.
        ELION_STREAM_LEASE_SECONDS="15",
    )
    env.update(extra_env)
    log_path = tmp_dir / f"daphne-{name}-{port}.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "elion.asgi:application"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    log.close()
    app = LiveApp(url=f"http://127.0.0.1:{port}", process=process, log_path=log_path)
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}:\n{app.log()}")
        try:
            with urllib.request.urlopen(f"{app.url}/static/css/elion.css", timeout=2) as response:
                if response.status == 200:
                    return app
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        if time.monotonic() > deadline:
            stop_daphne(app)
            raise RuntimeError(f"daphne did not start listening on {app.url}:\n{app.log()}")
        time.sleep(0.1)


def stop_daphne(app: LiveApp) -> None:
    if app.process.poll() is not None:
        return
    app.process.send_signal(signal.SIGTERM)
    try:
        app.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        app.process.kill()
        app.process.wait(timeout=5)


def wait_until_no_stream(timeout: float = 10.0) -> None:
    """Let a reply still streaming in the server finish before the tables are flushed."""
    from transcript.models import Message, MessageStatus

    deadline = time.monotonic() + timeout
    while Message.objects.filter(status=MessageStatus.STREAMING).exists() and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture(scope="session")
def _daphne_with_scripted_provider(django_db_setup, django_db_blocker, scripted_server, tmp_path_factory):
    """One server per test session: it keeps no state between tests but the database."""
    with django_db_blocker.unblock():
        app = start_daphne(
            "scripted",
            {
                "OPENAI_API_KEY": "test-key",
                "OPENAI_BASE_URL": scripted_server.base_url,
                "ELION_API_SELECTOR": "responses",
                "ELION_MODEL": "gpt-5.5",
            },
            tmp_path_factory.mktemp("daphne"),
        )
    yield app
    stop_daphne(app)


@pytest.fixture
def live_app(transactional_db, _daphne_with_scripted_provider, scripted_server, settings):
    """The app served by Daphne, replying through the session's scripted provider.

    The test process is configured like the server, so rows a test seeds carry
    the provider binding the server checks (`configured_provider()`).
    """
    settings.OPENAI_API_KEY = "test-key"
    settings.OPENAI_BASE_URL = scripted_server.base_url
    settings.ELION_API_SELECTOR = "responses"
    settings.ELION_MODEL = "gpt-5.5"
    settings.ELION_PROVIDER_ID = "openai"
    settings.ELION_DEPLOYMENT = ""
    scripted_server.clear()
    yield _daphne_with_scripted_provider
    scripted_server.release()
    wait_until_no_stream()
    scripted_server.clear()


@pytest.fixture(scope="session")
def _offline_protected_daphne(django_db_setup, django_db_blocker, tmp_path_factory):
    """One protected server per test session, replying with the offline demo provider."""
    with django_db_blocker.unblock():
        app = start_daphne(
            "offline",
            {"ELION_OWNER_PASSWORD": OWNER_PASSWORD, "ELION_API_TOKEN": OWNER_API_TOKEN},
            tmp_path_factory.mktemp("daphne"),
        )
    yield app
    stop_daphne(app)


@pytest.fixture
def offline_protected_app(transactional_db, _offline_protected_daphne):
    """A server with no OPENAI_API_KEY (offline demo provider), an owner password and an API token."""
    yield _offline_protected_daphne
    wait_until_no_stream()


# --- browser ------------------------------------------------------------------


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (never `playwright install`)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an asyncio loop registered as running on this
    # thread while the browser lives, which Django's ORM guard reads as "called
    # from async code". Tests here use the ORM between browser steps on purpose
    # (no loop work is pending then), so the guard is lifted while the browser
    # exists, and restored afterwards. Tests that use it run last (tests/conftest.py),
    # so the lifted guard never reaches the rest of the suite.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, request):
    """A fresh browser context; a screenshot lands in test-artifacts/ when the test fails."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda error: page.js_errors.append(str(error)))
    # Content-Security-Policy: chromium reports every blocked script, style or connection on the console.
    page.csp_violations = []
    page.on(
        "console",
        lambda message: page.csp_violations.append(message.text)
        if "Content Security Policy" in message.text
        else None,
    )
    yield page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in request.node.name)
        try:
            page.screenshot(path=str(ARTIFACTS / f"{safe}.png"), full_page=True)
        except Exception as exc:  # noqa: BLE001 - a failed screenshot must not hide the real failure
            print(f"screenshot failed: {exc}")
    context.close()
    assert page.csp_violations == [], "the page broke its Content-Security-Policy"


@pytest.fixture
def import_worker(live_app, settings):
    """A real django-q2 cluster beside the live server, on its database and data dir: it runs background
    imports (the import page posts `?background=true`)."""
    from tests.support.queue_cluster import QueueCluster

    cluster = QueueCluster({"ELION_DATA_DIR": str(settings.DATA_DIR)}).start()
    yield cluster
    cluster.stop()
