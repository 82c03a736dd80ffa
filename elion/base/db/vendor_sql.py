"""Hand-written SQL in migrations that only one database has (full-text tables, triggers, index kinds)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def vendor_statements(statements_by_vendor: dict[str, Sequence[str]]) -> Callable:
    """A `RunPython` function that runs the statements listed for the migrating database's vendor
    (`"sqlite"`, `"postgresql"`), in order, and nothing on any other."""

    def run(apps: object, schema_editor: object) -> None:
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, ()):
            schema_editor.execute(statement)

    return run
