from django.apps import AppConfig


class ContinuityConfig(AppConfig):
    name = "continuity"
    default_auto_field = "django.db.models.BigAutoField"
