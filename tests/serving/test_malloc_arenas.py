"""The web server's malloc arenas are capped when the ASGI application loads (`elion.base.malloc_arenas`)."""

from __future__ import annotations

import pytest

from elion.base.malloc_arenas import malloc_arenas_cap
from tests.support.live_server import python_printed

# Loads the ASGI application as a server does, with the cap's function replaced by one that records its call.
LOAD_ASGI = """
from elion.base import malloc_arenas
calls = []
malloc_arenas.malloc_arenas_cap = calls.append
import elion.asgi
print(calls)
"""


def test_glibc_takes_the_cap_and_zero_leaves_its_own():
    assert malloc_arenas_cap(2) is True  # this machine's Python runs on glibc
    assert malloc_arenas_cap(0) is False


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("configured", "applied"), [(None, "[2]"), ("0", "[0]"), ("4", "[4]")])
def test_loading_the_asgi_application_applies_the_setting(configured, applied):
    assert python_printed(LOAD_ASGI, {"ELION_MALLOC_ARENAS": configured}) == applied
