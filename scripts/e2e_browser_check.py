#!/usr/bin/env python3
"""Standalone smoke check: Playwright (Python) can drive Debian's chromium.

Not a test. Run with the project venv:  .venv/bin/python scripts/e2e_browser_check.py
Install the browser first with:  apt-get install -y chromium   (never `playwright install`).
"""

import sys

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def main() -> int:
    url = "data:text/html,<html><head><title>elion-browser-ok</title></head><body><p id=x>hi</p></body></html>"
    # A plain launch() gives chromium a fresh temporary profile (user-data-dir) of its own.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(url)
            title = page.title()
            text = page.inner_text("#x")
            print(f"browser version: {browser.version}")
            print(f"title: {title}")
        finally:
            browser.close()
    if title != "elion-browser-ok" or text != "hi":
        print("unexpected page content", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
