from django.apps import AppConfig
from django.contrib.staticfiles.apps import StaticFilesConfig as BaseStaticFilesConfig


class ElionConfig(AppConfig):
    """The project package as an app: it owns the login throttle's rows."""

    name = "elion"
    label = "elion"
    default_auto_field = "django.db.models.BigAutoField"


class StaticFilesConfig(BaseStaticFilesConfig):
    """Django's staticfiles, without DRF's browsable-API files: the API renders JSON only
    (`DEFAULT_RENDERER_CLASSES`), so its 4.3 MB of CSS, fonts and scripts would be collected and
    compressed on every change for no page (issue 41, item 5)."""

    ignore_patterns = [*BaseStaticFilesConfig.ignore_patterns, "rest_framework/*"]
