"""A web server process's malloc arenas, capped (issue 40: the server's memory after serving long threads).

glibc gives a thread that allocates while another holds an arena's lock an arena of its own, up to eight
per core. A send builds its request (up to ~1,700 items under the default budget, a few MiB of short-lived
objects) in whichever thread of the server's pool runs it, so each of those arenas keeps its own
high-water mark: after serving threads up to 100,000 messages (`bench/years.py`, SQLite, 21 rounds) the
server's RSS grew 65–72 MiB in three runs with glibc's cap and 37–48 MiB in four with two arenas, runs
alternated (bench/results/years.md). Nothing is kept between sends either way; the arenas only hold on to
freed pages.

`ELION_MALLOC_ARENAS` (default 2; 0 keeps glibc's own cap) is applied when the ASGI application loads,
before the server starts its threads, through glibc's `mallopt(M_ARENA_MAX)`, the same setting as the
`MALLOC_ARENA_MAX` environment variable. Where there is no glibc (musl, macOS) nothing changes.
"""

from __future__ import annotations

import ctypes
import logging

logger = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc's malloc.h


def malloc_arenas_cap(arenas: int) -> bool:
    """Cap this process's malloc arenas at `arenas`; whether it was applied (False: 0 asked, or no glibc)."""
    if arenas <= 0:
        return False
    try:
        # The process's own symbols, libc's among them: no library search (`find_library` runs ldconfig).
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    applied = bool(mallopt(M_ARENA_MAX, arenas))
    if not applied:
        logger.warning("malloc refused an arena cap of %d", arenas)
    return applied
