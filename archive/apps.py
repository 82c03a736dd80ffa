from django.apps import AppConfig


class ArchiveConfig(AppConfig):
    name = "archive"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Hand continuity the reader of an archived conversation's turns (continuity imports nothing of archive)."""
        # local import: the reader imports models, which are loaded only after every app config.
        from archive.services.handoff_store import archived_turns

        # local import: so does continuity's store, which keeps the reader.
        from continuity.rules.archive_handoff_store import archived_turns_reader_register

        archived_turns_reader_register(archived_turns)
