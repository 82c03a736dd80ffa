"""The Archive pages (issue 19, "The smaller ones"): the document list in pages of 25 with page links,
and search matches marked on the results and on the document they open, escaped safely."""

from __future__ import annotations

import re

import pytest

from archive.models import ArchiveDocument
from archive.services.documents import archive_document_add_text
from archive.templatetags.search_marks import marked
from archive.web.pages import ARCHIVE_PAGE_SIZE

pytestmark = pytest.mark.django_db


def listed_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'data-archive-item="(\d+)"', html)]


def add(n: int, collection: str = "papers") -> list[int]:
    return [
        archive_document_add_text(text=f"Note number {i} in {collection}.", collection=collection, title=f"Note {i}")
        .document.pk for i in range(n)
    ]


def test_archive_lists_documents_in_pages_with_page_links(client):
    ids = add(ARCHIVE_PAGE_SIZE + 5)
    first = client.get("/archive/").content.decode()
    assert listed_ids(first) == sorted(ids, reverse=True)[:ARCHIVE_PAGE_SIZE]
    assert "data-archive-pages" in first and 'href="?page=2"' in first
    assert f"Documents 1–{ARCHIVE_PAGE_SIZE} of {len(ids)}" in first
    # The heading counts the whole collection, not the page.
    assert f"Papers ({len(ids)})" in first
    second = client.get("/archive/", {"page": 2}).content.decode()
    assert listed_ids(second) == sorted(ids, reverse=True)[ARCHIVE_PAGE_SIZE:]
    assert 'href="?page=1"' in second and '<span aria-current="page">2</span>' in second


def test_pages_keep_collections_in_their_order_and_every_document_appears_once(client):
    papers, testimony, conversations = add(12, "papers"), add(12, "testimony"), add(12, "conversations")
    seen = []
    for number in (1, 2):
        seen += listed_ids(client.get("/archive/", {"page": number}).content.decode())
    collection_of = dict(ArchiveDocument.objects.values_list("pk", "collection"))
    assert sorted(seen) == sorted(papers + testimony + conversations)
    order = [collection_of[i] for i in seen]
    assert order == sorted(order, key=["conversations", "incarnations", "papers", "testimony"].index)


@pytest.mark.parametrize("number", ["0", "-1", "999", "x", "1e9", "2" * 40])
def test_a_bad_page_number_shows_the_nearest_page_never_an_error(client, number):
    add(ARCHIVE_PAGE_SIZE + 1)
    response = client.get("/archive/", {"page": number})
    assert response.status_code == 200 and listed_ids(response.content.decode())


def test_one_page_of_documents_shows_no_page_links(client):
    add(3)
    html = client.get("/archive/").content.decode()
    assert len(listed_ids(html)) == 3 and "data-archive-pages" not in html


def test_search_results_mark_the_matched_words_and_link_to_the_marked_document(client):
    document = archive_document_add_text(
        text="The Heron waits at dawn; herons & <b>egrets</b> too. heron!", collection="papers", title="Field notes"
    ).document
    html = client.get("/archive/", {"q": "heron egrets"}).content.decode()
    (excerpt,) = re.findall(r"<p data-archive-excerpt>(.*?)</p>", html, re.S)
    assert excerpt == (
        'The <mark class="match">Heron</mark> waits at dawn; herons &amp; &lt;b&gt;<mark class="match">egrets</mark>'
        '&lt;/b&gt; too. <mark class="match">heron</mark>!'
    )
    assert f'href="/archive/{document.pk}/?q=heron%20egrets#chunk-1"' in html
    opened = client.get(f"/archive/{document.pk}/", {"q": "heron egrets"}).content.decode()
    assert opened.count('<mark class="match">') == 3 and "<b>egrets" not in opened
    plain = client.get(f"/archive/{document.pk}/").content.decode()
    assert "<mark" not in plain


def test_marks_never_fall_inside_an_escaped_entity_or_let_markup_through():
    assert marked("salt & amp <amp>", ["amp"]) == (
        'salt &amp; <mark class="match">amp</mark> &lt;<mark class="match">amp</mark>&gt;'
    )
    assert marked('"><script>alert(1)</script>', ["script"]) == (
        '&quot;&gt;&lt;<mark class="match">script</mark>&gt;alert(1)&lt;/<mark class="match">script</mark>&gt;'
    )
    assert marked("no terms", []) == "no terms" and marked(None, ["x"]) == ""
