"""A fresh instance of the app in its own data directory and (on PostgreSQL) its own database, for tests that
migrate it step by step through `manage.py` (tests/conversations/test_migrations.py,
tests/transcript/test_rows_move_migration.py, tests/conversations/test_settings_rows_move_migration.py)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.db import connection

from tests.operations.backup.conftest import FreshInstance


def before_the_move(move: tuple[str, str]) -> str:
    """Code for `manage.py shell -c` that names `executor` and `targets`: the last migration of every app that
    does not need the migration `move` (whatever was added after it), so `executor.migrate(targets)` migrates
    an instance to just before the move and `executor.loader.project_state(targets).apps` has its models."""
    return f"""
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
executor = MigrationExecutor(connection)
graph = executor.loader.graph
after, todo = set(), [graph.node_map[{move!r}]]
while todo:
    node = todo.pop()
    if node.key not in after:
        after.add(node.key)
        todo.extend(node.children)
targets = []
for app, name in graph.leaf_nodes():
    node = (app, name)
    while node is not None and node in after:
        node = next((parent for parent in graph.node_map[node].parents if parent[0] == app), None)
    if node is not None:
        targets.append(node)
"""


def last_json(instance: FreshInstance, code: str) -> object:
    """What `manage.py shell -c code` printed last, as JSON."""
    result = instance.manage("shell", "-c", code)
    return json.loads(result.stdout.strip().splitlines()[-1])


@contextmanager
def migrating_instance(tmp_path: Path) -> Iterator[FreshInstance]:
    """An unmigrated instance under `tmp_path`; its PostgreSQL database is dropped afterwards."""
    data_dir = tmp_path / "migrating"
    data_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ELION_ATTACHMENT_ROOT", "ELION_SQLITE_PATH", "DATABASE_URL")}
    env["ELION_DATA_DIR"] = str(data_dir)
    name = None
    if connection.vendor == "postgresql":
        name = f"elion_migrate_{uuid.uuid4().hex[:12]}"
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
        env["DATABASE_URL"] = urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{name}"))
    try:
        yield FreshInstance(data_dir, env)
    finally:
        if name is not None:
            with connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
