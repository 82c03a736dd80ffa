"""How long a browser test waits for a condition: one figure for every page test.

CI runs four test processes on two cores; there a page's module script, its service worker or a
background job has taken longer than Playwright's 5 s default, and once longer than 10 s. A condition
that is met sooner returns at once, so the figure costs a passing test nothing.
"""

WAIT_MS = 30_000
WAIT_SECONDS = WAIT_MS / 1000
