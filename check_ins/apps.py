from django.apps import AppConfig


class CheckInsConfig(AppConfig):
    name = "check_ins"
    label = "check_ins"
    verbose_name = "Check-ins"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Add the check-ins' tool (`propose_check_in`) to the send's table of tools."""
        # local import: the tool imports models, which are loaded only after every app config.
        from check_ins.sending.tools import check_in_tools_add

        check_in_tools_add()
