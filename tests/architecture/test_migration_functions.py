"""A test that runs a migration's own function hands it the models as that migration saw them.

The live registry (`django.apps.apps`) answers with today's app labels; a data migration asks with the
labels of its day, so the day a row moved to another app such a test broke (issue 45). Every test module
that imports a migration module must take `apps_at` (tests/support/migration_state.py), never the live
registry.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def live_registry_beside_a_migration(paths, root: Path = ROOT) -> list[str]:
    found = []
    for path in paths:
        source = path.read_text()
        if ".migrations." not in source:
            continue
        tree = ast.parse(source)
        loads_migration = any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and ".migrations." in str(node.args[0].value)
            for node in ast.walk(tree)
        )
        live_registry = any(
            isinstance(node, ast.ImportFrom) and node.module == "django.apps"
            and any(alias.name == "apps" for alias in node.names)
            for node in ast.walk(tree)
        )
        if loads_migration and live_registry:
            found.append(str(path.relative_to(root)))
    return found


def test_no_test_runs_a_migration_function_on_the_live_registry():
    assert live_registry_beside_a_migration(sorted((ROOT / "tests").rglob("test_*.py"))) == []


def test_the_scan_finds_the_live_registry_beside_a_migration(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text('import importlib\nfrom django.apps import apps\n'
                      'm = importlib.import_module("x.migrations.0001_a")\nm.f(apps, None)\n')
    assert live_registry_beside_a_migration([sample], root=tmp_path) == ["test_sample.py"]
