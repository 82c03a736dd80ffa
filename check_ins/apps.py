from django.apps import AppConfig


class CheckInsConfig(AppConfig):
    name = "check_ins"
    label = "check_ins"
    verbose_name = "Check-ins"
    default_auto_field = "django.db.models.BigAutoField"
