"""axe-core in a Playwright page: the serious and critical violations it finds, and their report lines.

axe-core is a test's tool, vendored under tests/support/vendor/axe-core (never served)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
REPORTED_IMPACTS = ("serious", "critical")


def axe_violations(page: Page) -> list[dict]:
    """Serious and critical violations axe-core finds on the loaded page (its WCAG A/AA and best-practice rules)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;undefined")
    results = page.evaluate("() => axe.run(document, { resultTypes: ['violations'] })")
    return [v for v in results["violations"] if v["impact"] in REPORTED_IMPACTS]


def violation_lines(where: str, violations: list[dict]) -> list[str]:
    lines = []
    for violation in violations:
        targets = ", ".join(" ".join(map(str, node["target"])) for node in violation["nodes"][:8])
        more = f" (+{len(violation['nodes']) - 8} more)" if len(violation["nodes"]) > 8 else ""
        lines.append(f"{where}: {violation['id']} [{violation['impact']}] at {targets}{more} — {violation['help']}")
    return lines
