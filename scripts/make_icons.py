#!/usr/bin/env python3
"""Render the app icon (static/icons/elion.svg) to the PNGs the manifest and the favicon name.

Not a test. Run with the project venv:  .venv/bin/python scripts/make_icons.py
Chromium draws the SVG (Debian's /usr/bin/chromium through Playwright), so the PNGs
are exactly the SVG: 32 (favicon), 192 and 512 (manifest, `any`) and a full-bleed
512 for `maskable` (no rounded corners; the letter sits inside the safe zone).
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
ICONS = ROOT / "static" / "icons"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
# (file name, size in px, full bleed)
OUTPUTS = (("elion-32.png", 32, False), ("elion-192.png", 192, False), ("elion-512.png", 512, False),
           ("elion-maskable-512.png", 512, True))


def svg_for(full_bleed: bool) -> str:
    svg = (ICONS / "elion.svg").read_text()
    return svg.replace('rx="112"', 'rx="0"') if full_bleed else svg


def icon_render(page: Page, svg: str, size: int, target: Path) -> None:
    data = base64.b64encode(svg.encode()).decode()
    page.set_viewport_size({"width": size, "height": size})
    page.set_content(
        "<html><body style='margin:0;background:transparent'>"
        f"<img src='data:image/svg+xml;base64,{data}' width='{size}' height='{size}' style='display:block'>"
        "</body></html>"
    )
    page.wait_for_function("document.images[0].complete")
    page.screenshot(path=str(target), omit_background=True)


def main() -> int:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            for name, size, full_bleed in OUTPUTS:
                icon_render(page, svg_for(full_bleed), size, ICONS / name)
                print(f"{name}: {(ICONS / name).stat().st_size} bytes")
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
