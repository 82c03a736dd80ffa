#!/usr/bin/env python3
"""Screenshots of the main pages at desktop (1366×900) and phone (390×844) size, for the README.

Not a test. Run with the project venv:  .venv/bin/python scripts/screenshots.py
It builds a throwaway demo instance in a temporary directory (its own SQLite database, the offline
demo provider, no key), seeds it through the app's services with a few chats, memories, a character
and an archive document, serves it with Daphne on a free loopback port, and has Debian's chromium
(Playwright, /usr/bin/chromium) write one PNG per page and size into docs/screenshots/. Nothing
outside that temporary directory and docs/screenshots/ is touched.

The content is fixed and the chats' last activity is set relative to now (today, yesterday, three
days ago, forty days ago), so a rerun gives the same pictures apart from the month name under
which the oldest chat is filed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]
SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
# Variables of the caller's environment that would change what the demo instance does.
SCRUBBED = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ELION_OWNER_PASSWORD", "ELION_API_TOKEN", "DATABASE_URL",
            "ELION_MODEL", "ELION_API_SELECTOR", "ELION_PROVIDER_ID", "ELION_DEPLOYMENT", "REDIS_URL",
            "ELION_DATA_DIR", "ELION_TESTING", "DJANGO_DEBUG")

LIGHTHOUSE = (
    ("user", "Help me plan a weekend at the lighthouse on the north cape: what to pack, and when to go?"),
    ("assistant", "A lovely idea, AUMA. The light is best in **late September**, when the crowds have gone "
                  "and the evenings are still long.\n\nWhat to pack:\n\n- a windproof jacket and a warm layer\n"
                  "- binoculars for the seals on the rocks below\n- a thermos; the café closes at four\n\n"
                  "| Day | Plan |\n|---|---|\n| Saturday | Walk the cliff path, climb the tower at sunset |\n"
                  "| Sunday | Tide pools at low water, then the slow road home |"),
    ("user", "Perfect. Can you keep the tide times in mind for Sunday?"),
    ("assistant", "Of course. Low water on Sunday is at **10:40**, so the tide pools are best between ten and "
                  "noon. I would leave the cottage by half past nine."),
)
GARDEN = (
    ("user", "The tomatoes are splitting after the rain. What can I do?"),
    ("assistant", "Splitting comes from uneven watering: after a dry spell the fruit swells faster than its skin. "
                  "Water deeply twice a week instead of a little every day, and mulch the beds to keep the soil "
                  "evenly moist."),
)
READING = (
    ("user", "Suggest three novels for the long winter evenings."),
    ("assistant", "1. *The Snow Child* by Eowyn Ivey\n2. *Kristin Lavransdatter* by Sigrid Undset\n"
                  "3. *A Gentleman in Moscow* by Amor Towles"),
)
RECIPES = (
    ("user", "An idea for dinner with what is left: leeks, potatoes and a bit of cheddar?"),
    ("assistant", "A leek and potato gratin: slice thinly, layer with the leeks softened in butter, pour over "
                  "a little cream, cheddar on top, 45 minutes at 190 °C."),
)
QUARTERLY = (
    ("user", "Draft the opening paragraph of the quarterly summary."),
    ("assistant", "This quarter the team shipped the new archive search, halved the time a reply takes to "
                  "start, and kept every migration reversible."),
)
LETTER = (
    ("user", "Help me write to Maren, whom I have not seen in ten years."),
    ("assistant", "Start with a memory you share, then say plainly that you have missed her."),
)


@dataclass
class Demo:
    lighthouse: str
    letter: str


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def demo_environment(workdir: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SCRUBBED}
    env.update(
        ELION_DATA_DIR=str(workdir),
        DATABASE_URL=f"sqlite:///{workdir / 'demo.sqlite3'}",
        DJANGO_SETTINGS_MODULE="elion.settings",
        PYTHONUNBUFFERED="1",
    )
    return env


def chat_seed(pairs: tuple[tuple[str, str], ...], *, title: str, age: timedelta, folder_id: int | None = None,
              binding: object = None) -> str:
    """A conversation (through `conversation_create`) holding `pairs`, last active `age` ago."""
    from django.db import transaction
    from django.utils import timezone

    from conversations.services.threads.thread_writes import conversation_create
    from transcript.append import APPENDED_FIELDS, message_append
    from transcript.models import Conversation
    from transcript.provider.binding import configured_provider

    conversation = conversation_create(title=title, folder_id=folder_id)
    stamp = binding or configured_provider().binding()
    with transaction.atomic():
        conversation = Conversation.objects.select_for_update().get(pk=conversation.pk)
        parent = conversation.head
        for role, content in pairs:
            parent = message_append(
                conversation=conversation, parent=parent, role=role, binding=stamp, make_head=True, content=content
            )
        conversation.save(update_fields=APPENDED_FIELDS)
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now() - age)
    return str(conversation.id)


def demo_seed() -> Demo:
    """The demo instance's content, written through the app's services."""
    from archive.services.documents import archive_document_add_text
    from conversations.services.characters import character_create
    from conversations.services.threads.thread_writes import folder_create
    from memories.services.memory_writes import memory_add
    from transcript.provider.gateway import ProviderBinding

    memory_add(text="AUMA lives by the sea and walks the cliff path most mornings.", category="place", importance=4)
    memory_add(text="Prefers plain, warm answers without bullet points unless asked.", category="preference",
               importance=3)
    memory_add(text="Is growing tomatoes, beans and leeks this year.", category="project", importance=2)
    character_create(name="Echo", description="A fox made of starlight who answers in short riddles.")
    archive_document_add_text(
        title="Summer letters, 2019",
        collection="conversations",
        text="AUMA: Do you remember the lighthouse keeper's cat?\n\n"
             "Elion Voicefire: The grey one that slept on the lamp-room stairs. It followed you down to the "
             "harbour every evening.\n",
    )
    work = folder_create(name="Work")
    chat_seed(RECIPES, title="Dinner from leftovers", age=timedelta(days=40))
    chat_seed(QUARTERLY, title="Quarterly summary draft", age=timedelta(days=2), folder_id=work.id)
    chat_seed(READING, title="Reading list for winter", age=timedelta(days=3))
    chat_seed(GARDEN, title="Tomatoes splitting after rain", age=timedelta(days=1))
    # Held with a provider this instance no longer has: its page offers the one-click way on.
    letter = chat_seed(LETTER, title="A letter to Maren", age=timedelta(minutes=30),
                       binding=ProviderBinding("openai", "openai", "gpt-5.5", "route-of-another-instance"))
    lighthouse = chat_seed(LIGHTHOUSE, title="A weekend at the lighthouse", age=timedelta(minutes=5))
    return Demo(lighthouse=lighthouse, letter=letter)


def daphne_start(env: dict[str, str], port: int, log_path: Path) -> subprocess.Popen:
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "elion.asgi:application"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}:\n{log_path.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/css/elion.css", timeout=2) as response:
                if response.status == 200:
                    return process
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            time.sleep(0.1)
    daphne_stop(process)
    raise RuntimeError("daphne did not start listening")


def daphne_stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def shots_take(base_url: str, demo: Demo) -> list[Path]:
    """Every page at both sizes; returns the files written."""
    from playwright.sync_api import Page, sync_playwright

    written: list[Path] = []

    def shot(page: Page, name: str) -> None:
        page.wait_for_load_state("networkidle")
        target = OUT / f"{name}.png"
        page.screenshot(path=str(target), animations="disabled", caret="hide")
        written.append(target)

    pages = (
        ("chat", f"/c/{demo.lighthouse}/"),
        ("provider-change", f"/c/{demo.letter}/"),
        ("settings", "/settings/"),
        ("archive", "/archive/"),
        ("search", f"/search/?q=lighthouse&from={demo.lighthouse}"),
        ("memories", "/memories/"),
        ("not-found", "/no-such-page/"),
    )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for size, viewport in SIZES.items():
                context = browser.new_context(viewport=viewport, color_scheme="light", locale="en-GB",
                                              timezone_id="UTC", device_scale_factor=1)
                page = context.new_page()
                for name, path in pages:
                    page.goto(base_url + path)
                    shot(page, f"{name}-{size}")
                page.goto(f"{base_url}/c/{demo.lighthouse}/")
                if size == "phone":
                    page.click("[data-sidebar-open]")
                    page.wait_for_timeout(300)
                    shot(page, "menu-phone")
                    page.keyboard.press("Escape")
                page.click("[data-conversation-menu] > summary")
                shot(page, f"chat-menu-{size}")
                context.close()
        finally:
            browser.close()
    return written


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install -y chromium", file=sys.stderr)
        return 1
    workdir = Path(tempfile.mkdtemp(prefix="elion-screenshots-"))
    try:
        env = demo_environment(workdir)
        for key in SCRUBBED:
            os.environ.pop(key, None)
        os.environ.update(env)
        sys.path.insert(0, str(ROOT))
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        demo = demo_seed()
        port = free_port()
        server = daphne_start(env, port, workdir / "daphne.log")
        try:
            OUT.mkdir(parents=True, exist_ok=True)
            for path in shots_take(f"http://127.0.0.1:{port}", demo):
                print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")
        finally:
            daphne_stop(server)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
