from django.apps import AppConfig
from django.contrib.staticfiles.apps import StaticFilesConfig as BaseStaticFilesConfig

from elion.base.startup_objects import startup_objects_freeze


class ElionConfig(AppConfig):
    """The project package as an app: it owns the login throttle's rows."""

    default = True  # apps.py holds the staticfiles config too
    name = "elion"
    label = "elion"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the owner's authentication as the OpenAPI schema declares it (a drf-spectacular extension).
        In the queue's cluster, freeze the startup objects before it forks its workers
        (`elion.base.startup_objects`)."""
        from django.conf import settings

        # local import: drf-spectacular's extensions read DRF's settings, which need the apps loaded.
        from elion.web import api_schema  # noqa: F401

        if settings.ELION_QUEUE_CLUSTER_PROCESS:
            startup_objects_freeze(settings.ELION_GC_FREEZE)


class StaticFilesConfig(BaseStaticFilesConfig):
    """Django's staticfiles, without DRF's browsable-API files: the API renders JSON only
    (`DEFAULT_RENDERER_CLASSES`), so its 4.3 MB of CSS, fonts and scripts would be collected and
    compressed on every change for no page (issue 41, item 5)."""

    ignore_patterns = [*BaseStaticFilesConfig.ignore_patterns, "rest_framework/*"]
