"""Static files as the pages fetch them: hashed names, gzip and brotli siblings (issue 34, "Light pages").

WhiteNoise's `CompressedManifestStaticFilesStorage`, with the ES-module imports between our scripts
(`import … from "./chat/thread.js";`) rewritten to the hashed names too, so every file a page loads has a
content hash in its URL and WhiteNoise serves it as immutable (cached for good; a change gives a new name).
`collectstatic` (run by `make run` when the sources changed: `manage.py collect_static_if_changed`) writes
the files, the manifest and the compressed siblings.

A server started without `collectstatic` (Daphne directly, as Django's deployment guide shows) has no
manifest. Django's storage then raises on every `{% static %}`, so every page answered 500 and so did
the error page (issue 41, item 5). Without a manifest this storage names the source files unhashed
instead, WhiteNoise serves them from the finders (`WHITENOISE_USE_FINDERS`), and one warning says so.

Django's own module patterns (`support_js_module_import_aggregation`) match `import`/`export` anywhere, across
lines: a comment reading "the custom instructions the export carried are offered" matched as an
`export … from "./archive/import_job.js";` statement running on to the next real import, and that import,
already rewritten once, was hashed a second time (`import_job.<hash>.<hash>.js`, a 404: issue 41). Here a
statement starts a line (so a `//` comment never matches) and its bindings hold no `;` or quote (so a match
never runs across statements); a dynamic `import("…")` is left as Django writes it.
tests/pages/test_served_assets.py crawls every page as collectstatic serves it and fetches every file a page
or script names.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from whitenoise.storage import CompressedManifestStaticFilesStorage

logger = logging.getLogger(__name__)

_BINDINGS = r"""(?P<{name}>[\s\{{][^;'"`]*?|\*\s*as\s*\w+)"""
MODULE_PATTERNS = (
    "*.js",
    (
        (
            r"""(?m)(?P<matched>^[ \t]*import""" + _BINDINGS.format(name="import")
            + r"""\s*from\s*['"](?P<url>[./][^'"]*?)["']\s*;)""",
            """import%(import)s from "%(url)s";""",
        ),
        (
            r"""(?m)(?P<matched>^[ \t]*export""" + _BINDINGS.format(name="exports")
            + r"""\s*from\s*['"](?P<url>[./][^'"]*?)["']\s*;)""",
            """export%(exports)s from "%(url)s";""",
        ),
        (
            r"""(?m)(?P<matched>^[ \t]*import\s*['"](?P<url>[./][^'"]*?)["']\s*;)""",
            """import"%(url)s";""",
        ),
        (
            r"""(?P<matched>import\(["'](?P<url>[^'"]*?)["']\))""",
            """import("%(url)s")""",
        ),
    ),
)


class HashedCompressedStaticStorage(CompressedManifestStaticFilesStorage):
    patterns = CompressedManifestStaticFilesStorage.patterns + (MODULE_PATTERNS,)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.manifest_missing = not self.manifest_storage.exists(self.manifest_name)
        self._missing_reported = False

    def stored_name(self, name: str) -> str:
        if self.manifest_missing:
            if not self._missing_reported:
                self._missing_reported = True
                logger.warning(
                    "No static files manifest (%s): collectstatic has not run, so the pages name the source "
                    "files unhashed. `make run` collects them; or run `manage.py collectstatic`.",
                    self.path(self.manifest_name),
                )
            return name
        return super().stored_name(name)

    def post_process(self, *args: object, **kwargs: object) -> Iterator:
        yield from super().post_process(*args, **kwargs)
        self.manifest_missing = False
