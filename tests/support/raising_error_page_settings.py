"""The app's settings with `tests.support.raising_error_page` as the URL configuration (a subprocess server's)."""

from elion.settings import *  # noqa: F403

ROOT_URLCONF = "tests.support.raising_error_page"
