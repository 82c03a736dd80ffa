from django.apps import AppConfig


class ArchiveConfig(AppConfig):
    name = "archive"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Add the Archive's tools (`search_archive`, `list_library`, `read_library_file`) to the send's table, and
        hand continuity the reader of an archived conversation's turns (continuity imports nothing of archive)."""
        # local import: the tools import models, which are loaded only after every app config.
        from archive.sending.tools import archive_tools_add

        # local import: so does the reader of an archived conversation's turns.
        from archive.services.handoff_store import archived_turns

        # local import: and continuity's store, which keeps the reader.
        from continuity.rules.archive_handoff_store import archived_turns_reader_register

        archive_tools_add()
        archived_turns_reader_register(archived_turns)
