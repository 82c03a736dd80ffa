from django.apps import AppConfig


class ArchiveConfig(AppConfig):
    name = "archive"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Add the Archive's tools (`search_archive`, `list_library`, `read_library_file`) to the send's table."""
        # local import: the tools import models, which are loaded only after every app config.
        from archive.sending.tools import archive_tools_add

        archive_tools_add()
