"""Citations: the provider's `url_citation` annotations, kept on the reply as safe, numbered sources.

Stored in `Message.metadata["citations"]` as `[{"url", "title", "start", "end"}]` (offsets into the
reply's text) and shown under the reply, in the exports and the API. Only http and https links are
kept; anything else a provider (or a page it read) might hand over is dropped here, once, before it is
stored. Imports nothing of the project.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

URL_MAX_CHARACTERS = 2048
TITLE_MAX_CHARACTERS = 300
CITATIONS_MAX = 50


def _printable(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch)[0] != "C").strip()


def citation_url_safe(url: str) -> bool:
    """An absolute http(s) URL with a host, no credentials, no control characters, of bounded length."""
    if not isinstance(url, str) or not url or len(url) > URL_MAX_CHARACTERS or _printable(url) != url:
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and parts.username is None


def citations_clean(found: list[dict], text_length: int) -> list[dict]:
    """The citations worth keeping, in order: safe links, titles printable and bounded, offsets inside
    the text (clamped), each (url, start, end) once, at most `CITATIONS_MAX`."""
    kept: list[dict] = []
    seen: set[tuple[str, int, int]] = set()
    for citation in found:
        url = citation.get("url")
        if not citation_url_safe(url):
            continue
        start = min(max(int(citation.get("start") or 0), 0), text_length)
        end = min(max(int(citation.get("end") or 0), start), text_length)
        if (url, start, end) in seen:
            continue
        seen.add((url, start, end))
        title = _printable(str(citation.get("title") or ""))[:TITLE_MAX_CHARACTERS]
        kept.append({"url": url, "title": title, "start": start, "end": end})
        if len(kept) == CITATIONS_MAX:
            break
    return kept


def message_citations(metadata: dict | None) -> list[dict]:
    """A stored message's citations (none when it has none)."""
    citations = (metadata or {}).get("citations")
    return [c for c in citations if isinstance(c, dict) and citation_url_safe(c.get("url"))] if isinstance(citations, list) else []


def sources_numbered(metadata: dict | None) -> list[dict]:
    """One numbered source per distinct URL, in first-cited order: what the page and the Markdown export list."""
    sources: dict[str, dict] = {}
    for citation in message_citations(metadata):
        if citation["url"] not in sources:
            host = urlsplit(citation["url"]).hostname or citation["url"]
            sources[citation["url"]] = {
                "number": len(sources) + 1, "url": citation["url"], "title": citation["title"] or host, "host": host,
            }
    return list(sources.values())
