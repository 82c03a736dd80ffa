"""Static files as the pages fetch them: hashed names, gzip and brotli siblings (issue 34, "Light pages").

WhiteNoise's `CompressedManifestStaticFilesStorage`, with the ES-module imports between our scripts
(`import … from "./chat/thread.js";`) rewritten to the hashed names too, so every file a page loads has a
content hash in its URL and WhiteNoise serves it as immutable (cached for good; a change gives a new name).
`collectstatic` (run by `make run`) writes the files, the manifest and the compressed siblings.

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

from whitenoise.storage import CompressedManifestStaticFilesStorage

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
