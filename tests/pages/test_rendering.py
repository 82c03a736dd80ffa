"""Assistant Markdown is rendered server-side and sanitised (markdown-it-py + nh3)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from elion.base.markdown_rendering import render_markdown, sanitised_html


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
    assert '<td class="align-right">2</td>' in html


def test_table_alignment_is_a_class_because_the_pages_refuse_style_attributes():
    html = render_markdown("| l | c | r | n |\n|:-|:-:|-:|-|\n| 1 | 2 | 3 | 4 |")
    cells = [attrs for tag, attrs in elements(html) if tag in ("th", "td")]
    assert [cell.get("class") for cell in cells] == ["align-left", "align-center", "align-right", None] * 2
    assert "style" not in html


def test_fenced_code_keeps_its_language_class_and_escapes_content():
    html = render_markdown("```python\nif a < b: print('<b>')\n```")
    assert '<code class="language-python">' in html
    assert "&lt;b&gt;" in html and "<b>" not in html


def test_a_code_block_is_wrapped_with_its_language_as_a_label():
    html = render_markdown("Look:\n\n```python extra words\nx = 1\n```\n")
    assert html == (
        "<p>Look:</p>\n"
        '<div class="code-block"><div class="code-head"><span class="code-lang">python</span></div>'
        '<pre><code class="language-python">x = 1\n</code></pre></div>\n'
    )


@pytest.mark.parametrize(
    ("source", "language"),
    [
        ("```c++\nx\n```", "c++"),
        ("```objective-c\nx\n```", "objective-c"),
        ("~~~ C#\nx\n~~~", "C#"),
        ("```&#x70;&#x79;\nx\n```", "py"),
    ],
)
def test_plain_language_names_label_the_block(source, language):
    found = elements(render_markdown(source))
    assert ("span", {"class": "code-lang"}) in found
    assert ("code", {"class": f"language-{language}"}) in found
    assert f'<span class="code-lang">{language}</span>' in render_markdown(source)


def test_code_without_a_language_still_gets_the_header_for_copy():
    for source in ("```\nplain\n```", "    indented code"):
        found = elements(render_markdown(source))
        assert [tag for tag, _ in found] == ["div", "div", "pre", "code"], source
        assert found[3] == ("code", {}), source


@pytest.mark.parametrize(
    "source",
    [
        '```"><script>alert(1)</script>\nx\n```',
        "```py onerror=alert(1)\nx\n```",
        '```language-x"onload=alert(1)\nx\n```',
        "```<img/src/onerror=alert(1)>\nx\n```",
        "```" + "a" * 40 + "\nx\n```",
    ],
)
def test_a_hostile_fence_language_is_no_language(source):
    html = render_markdown(source)
    found = elements(html)
    assert [tag for tag, _ in found if tag not in ("div", "pre", "code", "span")] == []
    assert all(name == "class" for _, attrs in found for name in attrs), found
    code_classes = [attrs.get("class") for tag, attrs in found if tag == "code"]
    assert code_classes in ([None], ["language-py"]), code_classes
    assert "<script" not in html and "onerror=" not in html.split("<code")[0]


ROW, END = "<table><tbody><tr>", "</tr></tbody></table>"


@pytest.mark.parametrize(
    ("html", "kept"),
    [
        ('<div class="code-block">x</div>', '<div class="code-block">x</div>'),
        ('<div class="code-block evil">x</div>', "<div>x</div>"),
        ('<span class="hljs-keyword">x</span>', "<span>x</span>"),
        (f'{ROW}<td class="align-right">x</td>{END}', f'{ROW}<td class="align-right">x</td>{END}'),
        (f'{ROW}<td style="color:red" class="align-middle">x</td>{END}', f"{ROW}<td>x</td>{END}"),
        ('<p class="code-block" id="x">x</p>', "<p>x</p>"),
        ('<code class="language-py">x</code>', '<code class="language-py">x</code>'),
        ('<code class="language-py onclick">x</code>', "<code>x</code>"),
        ('<button type="button" onclick="alert(1)">x</button>', "x"),
        ('<p title="t" lang="en">x</p>', "<p>x</p>"),
        ("<svg><text>x</text></svg><math><mi>y</mi></math><xmp><b>z</b></xmp>after", "after"),
    ],
)
def test_the_sanitiser_drops_markup_the_markdown_rendering_never_writes(html, kept):
    # nh3 is the second layer: markup only a parser bug could produce is cut back to the allow-list.
    assert sanitised_html(html) == kept


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
