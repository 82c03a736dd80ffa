"""A web server process freezes its startup objects out of the collector's full passes when the ASGI
application loads (`elion.base.startup_objects`, issue 40: the longest single wait of a send)."""

from __future__ import annotations

import pytest

from tests.support.live_server import python_printed

# Loads the ASGI application as a server does; prints how many objects are frozen and how many a full
# collection still walks.
LOAD_ASGI = """
import gc
import elion.asgi
print(gc.get_freeze_count(), len(gc.get_objects()))
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("configured", [None, "1", "0"])
def test_loading_the_asgi_application_freezes_what_loading_made_unless_turned_off(configured):
    frozen, walked = map(int, python_printed(LOAD_ASGI, {"ELION_GC_FREEZE": configured}).split())
    if configured == "0":
        assert frozen == 0 and walked > 50_000
    else:
        # Django, the apps and their modules: the full passes walk next to none of them.
        assert frozen > 50_000 and walked < frozen / 50, (frozen, walked)


# The queue's cluster as `manage.py qcluster` starts it: the settings see its command, then the apps load.
LOAD_CLUSTER = """
import gc, sys
sys.argv = ["manage.py", "qcluster"]
import django
django.setup()
print(gc.get_freeze_count(), len(gc.get_objects()))
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("command", ["qcluster", "runserver"])
def test_the_queue_cluster_freezes_its_startup_objects_before_forking_its_workers(command):
    printed = python_printed(LOAD_CLUSTER.replace("qcluster", command), {"DJANGO_SETTINGS_MODULE": "elion.settings"})
    frozen, walked = map(int, printed.split())
    if command == "qcluster":
        assert frozen > 50_000 and walked < frozen / 50, (frozen, walked)
    else:  # any other command (a management command, a test run) keeps the interpreter's own
        assert frozen == 0
