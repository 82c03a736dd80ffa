"""Static files as the pages fetch them: hashed names, gzip and brotli siblings (issue 34, "Light pages").

WhiteNoise's `CompressedManifestStaticFilesStorage`, with the ES-module imports between our scripts
(`import … from "./chat/thread.js";`) rewritten to the hashed names too, so every file a page loads has a
content hash in its URL and WhiteNoise serves it as immutable (cached for good; a change gives a new name).
`collectstatic` (run by `make run`) writes the files, the manifest and the compressed siblings.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class HashedCompressedStaticStorage(CompressedManifestStaticFilesStorage):
    support_js_module_import_aggregation = True
