"""Every browser test waits as long as the others: no page test waits less than WAIT_MS for a condition.

A shorter literal somewhere (Playwright's 5 s default, a hand-rolled 10 s deadline) is what CI's four
processes on two cores beat: tests/support/browser_waits.py says why.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.browser_waits import WAIT_MS, WAIT_SECONDS

ROOT = Path(__file__).resolve().parents[2]
PAGE_TESTS = sorted((ROOT / "tests" / "pages").glob("*.py"))


def _number(node: ast.AST) -> float | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int | float) else None


def _waits_in_milliseconds(tree: ast.AST):
    """Playwright waits given as a literal: set_default_timeout(n), expect.set_options(timeout=n), any
    `to_…`/`wait_for…` call with timeout=n."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        if name == "set_default_timeout" and node.args:
            yield node.lineno, _number(node.args[0])
        if name == "set_options" or name.startswith(("to_", "wait_for")):
            for keyword in node.keywords:
                if keyword.arg == "timeout":
                    yield node.lineno, _number(keyword.value)


def _deadlines_in_seconds(tree: ast.AST):
    """Hand-rolled polls: `time.monotonic() + n`."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Call)
                and isinstance(node.left.func, ast.Attribute) and node.left.func.attr == "monotonic"):
            yield node.lineno, _number(node.right)


def short_waits(paths, root: Path = ROOT) -> list[str]:
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        name = path.relative_to(root)
        found += [f"{name}:{line} waits {ms} ms" for line, ms in _waits_in_milliseconds(tree)
                  if ms is not None and ms < WAIT_MS]
        found += [f"{name}:{line} waits {s} s" for line, s in _deadlines_in_seconds(tree)
                  if s is not None and s < WAIT_SECONDS]
    return found


def test_no_page_test_waits_less_than_the_shared_browser_wait():
    assert PAGE_TESTS
    assert short_waits(PAGE_TESTS) == []


def test_the_scan_finds_a_short_wait_of_each_kind(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import time\n"
        "context.set_default_timeout(10_000)\n"
        "expect(x).to_have_text('a', timeout=5000)\n"
        "page.wait_for_function('f', timeout=1000)\n"
        "deadline = time.monotonic() + 10\n"
        "fine = time.monotonic() + 60\n"
    )
    assert [entry.split(" waits ")[0] for entry in short_waits([sample], root=tmp_path)] == [
        "test_sample.py:2", "test_sample.py:3", "test_sample.py:4", "test_sample.py:5"]
