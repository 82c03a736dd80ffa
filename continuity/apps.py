from django.apps import AppConfig


class ContinuityConfig(AppConfig):
    name = "continuity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Connect the receivers of the domain events (the seed's prompt-refresh triggers) and the reader of archived turns."""
        # local import: the stores import models, which are loaded only after every app config.
        from continuity.rules.archive_handoff_store import archived_turns_reader_register

        # local import: so does the reader of archived turns.
        from continuity.rules.archive_turns_store import archived_turns

        # local import: and the receivers.
        from continuity.rules.refresh_triggers import connect_refresh_triggers

        connect_refresh_triggers()
        archived_turns_reader_register(archived_turns)
