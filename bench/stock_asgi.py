"""Today's way, for bench/upload_memory.py's comparison: Django's ASGI handler under Daphne as shipped,
without `elion.web.daphne_bounds` (Daphne's parser) and `elion.web.body_guard` (the ASGI layer).

    daphne bench.stock_asgi:application
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elion.settings")
application = get_asgi_application()
