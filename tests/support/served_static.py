"""The site as `make run` serves it: static files collected with the project's storage (hashed, compressed),
a Daphne reading them, an owner password set. Used by tests/pages/test_served_assets.py.

`collected_daphne` collects into the test process's own STATIC_ROOT (its data directory's `staticfiles`, which the
server shares through ELION_DATA_DIR) and empties it afterwards, so the rest of the suite serves the sources as
before. `crawl` follows every same-site link from the pages it is given and every file a page, script or
stylesheet names, as a browser would: `<script src>`, `<link href>` (stylesheets, modulepreload, icons, the
manifest), `<img src>`, static and dynamic ES-module imports, CSS `url()` and `@import`, the manifest's icons.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import deque
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import httpx

HASH = re.compile(r"\.[0-9a-f]{12}(?=\.)")
HASHED_STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "elion.base.static_storage.HashedCompressedStaticStorage"},
}
# Links a crawl must not follow: they end the session, or are files and API answers rather than pages.
NOT_PAGES = ("/static/", "/api/", "/logout/", "/admin/logout/", "/media/")
# A module specifier our scripts use: a path, relative or from the root (a bare name never loads without an
# import map, which the chromium half of the test would catch).
_SPECIFIER = r"""["']((?:\.{1,2}/|/)[^"'\s,;(){}]+)["']"""
JS_REFERENCES = (
    re.compile(r"""\b(?:import|export)\b[^;'"()]*?\bfrom\s*""" + _SPECIFIER),  # import … from / export … from
    re.compile(r"""\bimport\s*""" + _SPECIFIER),  # import "…";
    re.compile(r"""\bimport\(\s*""" + _SPECIFIER + r"""\s*\)"""),  # import("…")
)
CSS_REFERENCES = (
    re.compile(r"""url\(\s*['"]?([^'")]+?)['"]?\s*\)"""),
    re.compile(r"""@import\s+['"]([^'"]+)['"]"""),
)
LINE_COMMENT = re.compile(r"(?m)^\s*//.*$")
BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def hash_count(url: str) -> int:
    """How many content hashes the file name in `url` carries (one for a collected file)."""
    return len(HASH.findall(urlsplit(url).path.rsplit("/", 1)[-1]))


def collect_static(root) -> None:
    from django.core.management import call_command
    from django.test import override_settings

    with override_settings(STATIC_ROOT=root, STORAGES=HASHED_STORAGES, WHITENOISE_AUTOREFRESH=False):
        call_command("collectstatic", interactive=False, verbosity=0)


def empty_static_root(root) -> None:
    for child in root.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.files: list[str] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "a" and values.get("href") and "download" not in values:
            self.links.append(values["href"])
        for name in ("src", "href"):
            if (value := values.get(name)) and value.startswith("/static/"):
                self.files.append(value)


@dataclass
class Crawl:
    pages: dict[str, int] = field(default_factory=dict)  # path → status
    files: dict[str, int] = field(default_factory=dict)  # /static/ URL → status
    named_by: dict[str, str] = field(default_factory=dict)  # /static/ URL → the page or file that names it
    from_manifest: set[str] = field(default_factory=set)  # named by the web app manifest (JSON: never rewritten)

    def broken(self) -> list[str]:
        return [f"{url} → {status} (named by {self.named_by[url]})" for url, status in self.files.items() if status != 200]


def references(url: str, content_type: str, text: str) -> list[str]:
    if "javascript" in content_type:
        text = BLOCK_COMMENT.sub("", LINE_COMMENT.sub("", text))
        found = [match for pattern in JS_REFERENCES for match in pattern.findall(text)]
    elif "css" in content_type:
        text = BLOCK_COMMENT.sub("", text)
        found = [match for pattern in CSS_REFERENCES for match in pattern.findall(text)]
        found = [ref for ref in found if not ref.startswith(("data:", "#", "http:", "https:"))]
    elif "manifest" in content_type:
        found = [icon["src"] for icon in json.loads(text).get("icons", [])]
    else:
        return []
    return [urljoin(url, ref) for ref in found]


def crawl(client: httpx.Client, start: list[str], *, max_pages: int = 400) -> Crawl:
    """Every page reachable from `start` by same-site links (GET only), and every static file they need."""
    result = Crawl()
    pages, files = deque(start), deque()
    while pages and len(result.pages) < max_pages:
        path = pages.popleft()
        if path in result.pages:
            continue
        response = client.get(path)
        result.pages[path] = response.status_code
        if "text/html" not in response.headers.get("content-type", ""):
            continue
        parser = _PageParser()
        parser.feed(response.text)
        for href in parser.links:
            target = urlsplit(urljoin(path, href))
            if target.netloc and target.netloc != client.base_url.netloc:
                continue
            if target.scheme not in ("", "http", "https") or target.path.startswith(NOT_PAGES):
                continue
            if target.path.startswith("/admin/") and target.query:  # the admin's sort and filter links
                continue
            link = target.path + (f"?{target.query}" if target.query else "")
            if link not in result.pages:
                pages.append(link)
        for url in parser.files:
            result.named_by.setdefault(url, path)
            files.append(url)
    while files:
        url = files.popleft()
        if url in result.files:
            continue
        response = client.get(url, headers={"Accept-Encoding": "identity"})
        result.files[url] = response.status_code
        if response.status_code != 200:
            continue
        content_type = response.headers.get("content-type", "")
        for reference in references(url, content_type, response.text):
            result.named_by.setdefault(reference, url)
            if "manifest" in content_type:
                result.from_manifest.add(reference)
            files.append(reference)
    return result


def logged_in_client(base_url: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=base_url, timeout=30, follow_redirects=True)
    client.get("/login/")
    answer = client.post("/login/", data={"password": password, "csrfmiddlewaretoken": client.cookies["csrftoken"]},
                         headers={"Referer": f"{base_url}/login/"})
    assert answer.status_code == 200 and "/login/" not in str(answer.url), "the owner could not log in"
    return client
