"""Assistant Markdown is rendered server-side and sanitised (markdown-it-py + nh3)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from conversations.web.rendering import render_markdown


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    """The real elements in `html` (escaped text that looks like markup is not one)."""
    found: list[tuple[str, dict[str, str]]] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, {name: value or "" for name, value in attrs}))

    Collector().feed(html)
    return found


def test_markdown_basics_are_rendered():
    html = render_markdown("Some **bold**, *italic* and `code`.\n\n- one\n- two\n\n| a | b |\n|:-|-:|\n| 1 | 2 |")
    assert "<strong>bold</strong>" in html
    assert "<em>italic</em>" in html
    assert "<code>code</code>" in html
    assert html.count("<li>") == 2
    assert '<td style="text-align:right">2</td>' in html


def test_fenced_code_keeps_its_language_class_and_escapes_content():
    html = render_markdown("```python\nif a < b: print('<b>')\n```")
    assert '<code class="language-python">' in html
    assert "&lt;b&gt;" in html and "<b>" not in html


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "before <script>alert(1)</script> after",
        "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
        "```\n</code></pre><script>alert(1)</script>\n```",
    ],
)
def test_script_tags_never_survive(source):
    html = render_markdown(source)
    assert "script" not in [tag for tag, _ in elements(html)]
    assert "<script" not in html.lower()


@pytest.mark.parametrize(
    "source",
    [
        '<img src="x" onerror="alert(1)">',
        '<a href="#" onclick="alert(1)">x</a>',
        '<div onmouseover="alert(1)">hover</div>',
        '![x](https://example.com/a.png" onerror="alert(1))',
        '[x](https://example.com "title\" onmouseover=\"alert(1)")',
    ],
)
def test_event_handler_attributes_are_stripped(source):
    for tag, attrs in elements(render_markdown(source)):
        assert tag != "img"
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)


@pytest.mark.parametrize(
    "source",
    [
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click](  javascript:alert(1))",
        "[click](vbscript:msgbox(1))",
        "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        '<a href="javascript:alert(1)">click</a>',
        "<javascript:alert(1)>",
        "[click][ref]\n\n[ref]: javascript:alert(1)",
    ],
)
def test_dangerous_link_schemes_are_not_links(source):
    for tag, attrs in elements(render_markdown(source)):
        href = attrs.get("href", "").strip().lower()
        assert not href.startswith(("javascript:", "vbscript:", "data:")), (tag, attrs)


def test_safe_links_open_in_a_new_tab_without_referrer():
    html = render_markdown("[Elion](https://example.com/path?q=1)")
    assert 'href="https://example.com/path?q=1"' in html
    assert 'target="_blank"' in html
    assert "noopener" in html and "noreferrer" in html


def test_images_become_links_so_viewing_a_reply_fetches_nothing():
    html = render_markdown("![a cat](https://example.com/cat.png)")
    assert "<img" not in html
    assert '<a href="https://example.com/cat.png"' in html
    assert ">a cat</a>" in html


def test_empty_and_plain_text():
    assert render_markdown("") == ""
    assert render_markdown("just words") == "<p>just words</p>\n"
