"""A server process's startup objects kept out of the cyclic collector's full passes (issue 40: the longest
single wait of a send).

CPython's collector walks every object in its oldest generation on each full collection. Once Django, the
apps and every module are loaded, a web server process holds about 200,000 such objects (modules, classes,
functions, settings, URL patterns), none of which will ever be garbage, and a full pass over them took
120–170 ms on the 2-core VM, every 5–7 s while sends were coming in (a send allocates thousands of objects):
a send that met one waited that much on top of its own ~50 ms. Those passes were the longest single waits of
`bench/many_conversations.py`, idle or during a refresh (bench/results/many_conversations.md).

So when the ASGI application has loaded, one collection clears what loading left behind and `gc.freeze()`
moves the rest to the permanent generation: a full pass then walks only what was made since. The queue's
cluster does the same when its apps are ready, before it forks its workers, whose full passes took as long
(a refresh's worker ran one every ~0.5 s). `ELION_GC_FREEZE` (default true) turns it off.
"""

from __future__ import annotations

import gc


def startup_objects_freeze(enabled: bool) -> int:
    """Collect, then freeze every object this process holds; how many are frozen now (0: not enabled)."""
    if not enabled:
        return 0
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
