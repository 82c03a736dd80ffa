from django.apps import AppConfig


class ContinuityConfig(AppConfig):
    name = "continuity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Connect the receivers of the domain events: the seed's prompt-refresh triggers."""
        # local import: the receivers import models, which are loaded only after every app config.
        from continuity.rules.refresh_triggers import connect_refresh_triggers

        connect_refresh_triggers()
