"""The login throttle keeps the owner able to get in: a locked address or the overall lock leaves the owner's
known device its way in; a device's own wrong guesses lock that device; a forged device cookie counts as
none. (The throttle's basics: test_hardening.py.)"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from elion.models import LoginFailure

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery"


@pytest.fixture
def protected(settings):
    settings.ELION_OWNER_PASSWORD = PASSWORD
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True
    return settings


def _login(client: Client, password: str, address: str = "10.9.0.1"):
    return client.post(
        "/api/auth/login/", json.dumps({"password": password}), content_type="application/json", REMOTE_ADDR=address
    )


def test_login_throttle_keeps_the_owner_able_to_get_in_from_a_locked_address(protected):
    owner = Client()
    assert _login(owner, PASSWORD).status_code == 200
    assert "elion_login_device" in owner.cookies
    owner.post("/logout/")
    guesser = Client()
    for _ in range(5):
        assert _login(guesser, "wrong").status_code == 401
    assert _login(guesser, PASSWORD).status_code == 429  # the address is locked for anyone without a device
    assert _login(owner, PASSWORD).status_code == 200  # the owner's browser still gets in
    assert owner.get("/api/settings/").status_code == 200


def test_login_throttle_keeps_the_owner_able_to_get_in_under_the_overall_lock(protected, monkeypatch):
    from elion.base import login_throttle

    monkeypatch.setattr(login_throttle, "OVERALL_THRESHOLD", 3)
    owner = Client()
    assert _login(owner, PASSWORD, address="10.9.1.1").status_code == 200
    for index in range(3):
        _login(Client(), "wrong", address=f"10.9.2.{index}")
    assert _login(Client(), PASSWORD, address="10.9.2.99").status_code == 429
    assert _login(owner, PASSWORD, address="10.9.1.1").status_code == 200


def test_login_throttle_a_devices_own_wrong_guesses_lock_that_device(protected):
    device = Client()
    assert _login(device, PASSWORD).status_code == 200
    for _ in range(5):
        assert _login(device, "wrong").status_code == 401
    refused = _login(device, PASSWORD)
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 60
    # Counted under the device only: the address and the overall count are untouched.
    assert not LoginFailure.objects.filter(key__in=["client:10.9.0.1", "all"]).exists()


def test_login_throttle_a_forged_device_cookie_counts_as_none(protected):
    for _ in range(5):
        _login(Client(), "wrong")
    forged = Client()
    forged.cookies["elion_login_device"] = "abc:def"
    assert _login(forged, PASSWORD).status_code == 429
