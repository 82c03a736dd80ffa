"""No module over 450 lines (issue 32, "Grab-bags split by job"): a module that long holds more than one job.

Checked: every `.py` file of the project's packages (the layer packages of `.importlinter`), of
`bench/` and of `scripts/`. Not checked: `tests/` (a test module reads as a list of cases, and a
long one is split by subject, not by size) and `migrations/` (generated, and never edited once
applied). Lines are counted as an editor shows them, blank lines and comments included.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 450
PACKAGES = (
    "elion", "operations", "conversations", "continuity", "memories", "archive", "artifacts", "transcript", "check_ins"
)
CHECKED = (*PACKAGES, "bench", "scripts")


def _checked_modules() -> dict[str, int]:
    """Each checked module's path (from the repository root) and its number of lines."""
    sizes = {}
    for folder in CHECKED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" in path.relative_to(ROOT).parts:
                continue
            sizes[path.relative_to(ROOT).as_posix()] = len(path.read_text(encoding="utf-8").splitlines())
    return sizes


def test_no_module_over_450_lines():
    oversized = {path: lines for path, lines in _checked_modules().items() if lines > LIMIT}
    assert oversized == {}, f"split these by job (at most {LIMIT} lines a module): {oversized}"


def test_the_size_check_reads_the_packages_bench_and_scripts_but_not_tests_or_migrations():
    paths = set(_checked_modules())
    for folder in CHECKED:
        assert any(path.startswith(folder + "/") for path in paths), f"no module read under {folder}/"
    assert "elion/models/__init__.py" in paths
    assert not any(path.startswith("tests/") or "/migrations/" in path for path in paths)

