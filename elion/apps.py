from django.apps import AppConfig


class ElionConfig(AppConfig):
    """The project package as an app: it owns the login throttle's rows."""

    name = "elion"
    label = "elion"
    default_auto_field = "django.db.models.BigAutoField"
