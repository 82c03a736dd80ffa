"""No module of the app imports another module's private name (a `_name`): a helper a sibling needs is that
module's API and has a public name that says what it is, or it lives with the module that uses it. A private
name imported across modules shows a file split by size instead of by job (the "house" review).

Checked: every `.py` file of the app, function-local imports and relative imports included. Not checked:
`.venv`, `tests/` (a test may reach inside the module it tests), `bench/` and `scripts/` (they time and
drive the app from outside), `migrations/` (generated), hidden folders. Dunder names (`__version__`,
`from __future__ import annotations`) are not private.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {".venv", "tests", "bench", "scripts", "migrations"}


def _app_files() -> list[Path]:
    """Every `.py` file of the app, from the repository root."""
    files = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if not any(part in SKIPPED or part.startswith(".") for part in parts[:-1]):
            files.append(path)
    return files


def _project_names() -> set[str]:
    """The top-level names a project module's import starts with: the repository's packages and root modules."""
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")}
    return packages | {path.stem for path in ROOT.glob("*.py")}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports(tree: ast.Module, project: set[str]) -> list[str]:
    """Each `from <project module> import _name` of `tree`, at any depth, as `line: from module import _name`."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = "." * node.level + (node.module or "")
        if node.level == 0 and (node.module or "").split(".")[0] not in project:
            continue  # the standard library or a dependency
        found.extend(f"{node.lineno}: from {module} import {alias.name}" for alias in node.names if _is_private(alias.name))
    return found


def test_no_module_imports_a_private_name_of_another_module():
    project = _project_names()
    offenders = []
    for path in _app_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offenders.extend(f"{path.relative_to(ROOT).as_posix()}:{found}" for found in _private_imports(tree, project))
    assert offenders == [], "give these a public name, or move them to the module that uses them:\n" + "\n".join(
        offenders
    )


def test_the_check_reads_the_apps_but_not_tests_bench_scripts_or_migrations():
    paths = {path.relative_to(ROOT).as_posix() for path in _app_files()}
    for package in ("elion", "conversations", "continuity", "transcript", "operations"):
        assert any(path.startswith(package + "/") for path in paths), f"no module read under {package}/"
    assert "manage.py" in paths
    assert not any(path.split("/")[0] in SKIPPED or "/migrations/" in path for path in paths)
    assert {"transcript", "continuity", "elion"} <= _project_names()


def test_the_check_finds_private_names_at_any_depth_and_leaves_dunders_and_dependencies_alone():
    source = (
        "from __future__ import annotations\n"
        "from transcript.sample import _clipped, Public\n"
        "from elion import __version__\n"
        "from collections import _chain\n"
        "def f():\n"
        "    from .sibling import _helper\n"
    )
    found = _private_imports(ast.parse(source), {"transcript", "elion"})
    assert found == ["2: from transcript.sample import _clipped", "6: from .sibling import _helper"]
