"""Static files on the run/collect side (issue 41, item 5).

- `manage.py collect_static_if_changed` (what `make run` does) collects when the sources changed
  and not otherwise; a collect clears what an older one left.
- The served set leaves out what no page loads: axe-core (a test's tool, in tests/support/vendor/)
  and DRF's browsable-API files (the API renders JSON only).
- A server started without any collect (Daphne directly) serves every page and every file it links,
  unhashed, where every page answered 500 before.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command
from django.test import Client, override_settings

from tests.support.factories import thread

ROOT = Path(__file__).resolve().parents[2]
HASHED = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "elion.base.static_storage.HashedCompressedStaticStorage"},
}


def _collect(**options: object) -> str:
    out = io.StringIO()
    call_command("collect_static_if_changed", stdout=out, **options)
    return out.getvalue()


@pytest.mark.slow
def test_collect_runs_when_the_sources_changed_and_only_then(tmp_path):
    sources = tmp_path / "static"
    shutil.copytree(ROOT / "static", sources)
    root = tmp_path / "collected"
    root.mkdir()
    with override_settings(STATIC_ROOT=root, STATICFILES_DIRS=[sources], STORAGES=HASHED):
        assert "Static files collected." in _collect()
        assert (root / "staticfiles.json").exists()
        served = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
        assert not any(name.startswith(("vendor/axe-core/", "rest_framework/")) for name in served)
        assert any(re.fullmatch(r"js/chat\.[0-9a-f]{12}\.js", name) for name in served)

        assert "unchanged" in _collect()
        (root / "leftover.txt").write_text("from an older collect")

        (sources / "css" / "added.css").write_text("body { color: black; }\n")
        assert "Static files collected." in _collect()
        assert list(root.glob("css/added.*.css"))
        assert not (root / "leftover.txt").exists()  # a collect clears the old set first

        (root / "staticfiles.json").unlink()  # a manifest gone: collect again, whatever the stamp says
        assert "Static files collected." in _collect()


def test_axe_core_is_not_among_the_static_sources():
    assert not (ROOT / "static" / "vendor" / "axe-core").exists()
    assert (ROOT / "tests" / "support" / "vendor" / "axe-core" / "axe.min.js").exists()
    assert "rest_framework/*" in apps.get_app_config("staticfiles").ignore_patterns


@pytest.mark.django_db
def test_a_server_started_without_collectstatic_serves_every_page_and_file_unhashed(tmp_path):
    conversation = thread(("user", "hello"), ("assistant", "hi"))
    with override_settings(STATIC_ROOT=tmp_path, STORAGES=HASHED, WHITENOISE_USE_FINDERS=True):
        client = Client()
        for path in ("/", f"/c/{conversation.id}/", "/settings/", "/archive/", "/login/", "/no-such-page/"):
            response = client.get(path)
            assert response.status_code in (200, 302, 404), (path, response.status_code)
        page = client.get(f"/c/{conversation.id}/").content.decode()
        linked = re.findall(r'(?:href|src)="(/static/[^"]+\.(?:css|js|png|webmanifest))"', page)
        assert linked
        for url in linked:
            assert not re.search(r"\.[0-9a-f]{12}\.", url), f"{url}: hashed without a manifest?"
            response = client.get(url)
            assert response.status_code == 200, url
            response.close()
