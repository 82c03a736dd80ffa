"""Light pages (issue 34): static files collected through the hashed, compressed storage `make run` uses
(`elion.base.static_storage`), served by WhiteNoise with immutable caching and brotli/gzip siblings; the ES-module
imports between scripts name hashed files too; pages (never a streamed response) go out gzip-compressed.

The suite itself serves the source files unhashed (`STATIC_HASHED` off under pytest); this module collects once
into a throwaway STATIC_ROOT and switches the storage on for its tests."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import PurePosixPath

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from tests.support.factories import thread
from tests.support.served_static import hash_count, references

HASHED = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "elion.base.static_storage.HashedCompressedStaticStorage"},
}
FOREVER = re.compile(r"max-age=(\d+)")
YEAR = 365 * 24 * 3600


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    root = tmp_path_factory.mktemp("staticfiles")
    with override_settings(STATIC_ROOT=root, STORAGES=HASHED, WHITENOISE_AUTOREFRESH=False):
        call_command("collectstatic", interactive=False, verbosity=0)
    return root


@pytest.fixture
def hashed_site(collected):
    with override_settings(STATIC_ROOT=collected, STORAGES=HASHED, WHITENOISE_AUTOREFRESH=False,
                           WHITENOISE_USE_FINDERS=False):
        yield Client()


def linked(html: str, suffix: str) -> list[str]:
    return re.findall(rf'(?:href|src)="(/static/[^"]+\.{suffix})"', html)


@pytest.mark.django_db
def test_pages_link_hashed_static_files_cached_for_good_with_brotli(hashed_site):
    conversation = thread(("user", "hello"), ("assistant", "hi"))
    page = hashed_site.get(f"/c/{conversation.id}/").content.decode()
    styles, scripts = linked(page, "css"), linked(page, "js")
    assert styles and scripts
    for url in styles + scripts:
        assert re.search(r"\.[0-9a-f]{12}\.(css|js)$", url) and hash_count(url) == 1, f"{url}: not hashed once"
        response = hashed_site.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
        assert response.status_code == 200, url
        assert response["Content-Encoding"] == "br", url
        cache = response["Cache-Control"]
        assert "immutable" in cache and int(FOREVER.search(cache).group(1)) >= YEAR, (url, cache)
        response.close()
    gzipped = hashed_site.get(styles[0], HTTP_ACCEPT_ENCODING="gzip")
    assert gzipped["Content-Encoding"] == "gzip"
    gzipped.close()


def test_hash_count_tells_a_file_hashed_twice():
    assert hash_count("/static/js/archive/import_job.2b0966cc5021.js") == 1
    assert hash_count("/static/vendor/highlight.js/highlight.min.a45038ef6502.js") == 1
    assert hash_count("/static/js/archive/import_job.2b0966cc5021.2b0966cc5021.js") == 2
    assert hash_count("/static/js/archive/import_job.js") == 0


@pytest.mark.django_db
def test_module_imports_between_scripts_name_hashed_files(hashed_site, collected):
    """Every script the manifest names: each import (static, side-effect, dynamic) is a collected file hashed once.
    (A comment reading "the export carried …" once matched Django's `export … from` rewrite: issue 41.)"""
    manifest = json.loads((collected / "staticfiles.json").read_text())["paths"]
    scripts = [name for source, name in manifest.items() if source.endswith(".js") and source.startswith("js/")]
    checked = 0
    for name in scripts:
        for reference in references(f"/static/{name}", "text/javascript", (collected / name).read_text()):
            path = PurePosixPath(reference.removeprefix("/static/"))
            assert hash_count(reference) == 1 and (collected / path).is_file(), (name, reference)
            checked += 1
    assert checked >= 10, checked
    chat = next((collected / "js").glob("chat.*.js"))
    imports = re.findall(r'from "(\.[^"]+)"', chat.read_text())
    assert imports and all(re.search(r"\.[0-9a-f]{12}\.js$", name) for name in imports), imports
    markdown = next((collected / "js" / "chat").glob("markdown.*.js")).read_text()
    assert re.search(r'import\("\.\./\.\./vendor/highlight\.js/highlight\.min\.[0-9a-f]{12}\.js"\)', markdown)


@pytest.mark.django_db
def test_pages_go_out_gzip_compressed_and_streams_do_not():
    conversation = thread(("user", "hello"), ("assistant", "hi"))
    client = Client()
    page = client.get(f"/c/{conversation.id}/", HTTP_ACCEPT_ENCODING="gzip")
    assert page["Content-Encoding"] == "gzip"
    assert b"data-chat" in gzip.decompress(page.content)
    exported = client.get(f"/api/conversations/{conversation.id}/export/?format=markdown", HTTP_ACCEPT_ENCODING="gzip")
    assert exported.streaming and not exported.has_header("Content-Encoding")
    assert b"hello" in b"".join(exported.streaming_content)
    api = client.get(f"/api/conversations/{conversation.id}/", HTTP_ACCEPT_ENCODING="gzip")
    assert api.status_code == 200 and not api.has_header("Content-Encoding")
