"""The models as a migration saw them: what a test passes to a migration's own function.

A data migration asks its `apps` for models by the labels of its day (`conversations.AssistantSettings`,
`conversations.Conversation`). The live registry answers with today's labels only, so a test that handed
it the live registry broke the day a row moved to another app (issue 45: the transcript's rows, then the
settings rows). The historical registry at the migration answers as `migrate` itself would.
"""

from __future__ import annotations

from functools import cache

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.loader import MigrationLoader


@cache
def apps_at(app_label: str, migration_name: str) -> Apps:
    """The model registry right after migration `app_label.migration_name`, as `migrate` builds it."""
    loader = MigrationLoader(connection, ignore_no_migrations=True)
    return loader.project_state((app_label, migration_name)).apps
