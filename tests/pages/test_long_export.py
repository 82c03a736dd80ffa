"""A long thread's export streams through the real server (Daphne), complete and in chunks (issue 18)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from tests.support.factories import thread


def test_a_long_thread_export_streams_through_daphne_complete(live_app):
    count = 2_000
    conversation = thread(*[("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(count)])
    address = urlsplit(live_app.url)
    for fmt in ("json", "markdown"):
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
        connection.request("GET", f"/api/conversations/{conversation.id}/export/?format={fmt}")
        response = connection.getresponse()
        # Sent as it is produced: chunked, with no length known up front.
        assert response.status == 200
        assert response.getheader("Transfer-Encoding") == "chunked" and response.getheader("Content-Length") is None
        body = response.read()
        connection.close()
        if fmt == "json":
            assert [m["content"] for m in json.loads(body)["messages"]] == [f"turn {i}" for i in range(count)]
        else:
            assert body.decode().count(" said:\n") == count and body.endswith(f"turn {count - 1}\n".encode())
