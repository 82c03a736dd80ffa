"""Fixtures for the operations tests: a configured backup destination (`backup_env`, tests/support/stored_backups.py)."""

from tests.support.stored_backups import backup_env  # noqa: F401 - a fixture, found by pytest here
