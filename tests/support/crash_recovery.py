"""A Daphne app's environment for the crash tests."""

from __future__ import annotations


def app_env(scripted_server) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": scripted_server.base_url,
        "ELION_STREAM_LEASE_SECONDS": "1",
    }
