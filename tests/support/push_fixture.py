"""`push_service`: the tests' push service on loopback (tests/support/push_service.py) as a fixture; a plugin of
tests/conftest.py, for the push tests and the check-in runs that notify."""

from __future__ import annotations

import pytest

from tests.support.push_service import PushService


@pytest.fixture
def push_service(settings, tmp_path):
    """The tests' push service on loopback; the app accepts its http endpoint and keeps its VAPID key in tmp."""
    settings.ELION_PUSH_HTTP_LOOPBACK = True
    settings.ELION_PUSH_CONTACT = "mailto:owner@example.com"
    settings.DATA_DIR = tmp_path
    with PushService() as service:
        yield service
