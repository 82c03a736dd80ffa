"""A streaming reply is rendered as Markdown while it streams, exactly as the server renders it at `done`.

Real Daphne, real chromium, the scripted provider holding the reply once all its text is out, so the
live bubble can be read before `done` and again after the server's rendering has replaced it.
"""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import Page, expect

from elion.base.markdown_rendering import render_markdown, sanitised_html
from tests.support.chat_page import seed_conversation, send, wait_settled
from tests.support.dialogs import DialogWatch
from tests.support.factories import wait_until
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, MessageStatus, Role

pytestmark = pytest.mark.browser

MARKDOWN_MODULE = "/static/js/chat/markdown.js"

# Every construct a reply uses, and the ones that probe the two sanitisers.
CORPUS = [
    "",
    "just words",
    "Some **bold**, *italic*, ~~gone~~ and `code` & <angle> \"quotes\" 'single'.",
    "# H1\n## H2\n### H3\n#### H4\n##### H5\n###### H6\n\nSetext\n===",
    "- one\n- two\n  - nested\n\n1. first\n2. second\n\n7. seventh\n8. eighth",
    "- [ ] task\n- [x] done\n\n* loose\n\n* list",
    "> quoted\n> > twice\n\nafter",
    "| a | b | c |\n|:-|:-:|-:|\n| 1 | 2 | 3 |\n| `x` | **y** | [z](https://example.com) |",
    "| only header |\n|---|",
    "```python\ndef f(a, b):\n    return a < b  # <b>not bold</b>\n```",
    "```\nno language\n```\n\n    indented code\n    second line",
    "~~~ js  extra words\nconst x = 1;\n~~~",
    "```c++\nint main() {}\n```\n\n```objective-c\n@end\n```\n\n```C#\nvar x = 1;\n```",
    "```python\nunclosed fence while streaming",
    '```"><script>alert(1)</script>\nx\n```',
    "```py onerror=alert(1)\nx\n```",
    "```&#x70;&#x79;\nprint(1)\n```",
    "```language-x\"onload=alert(1)\nx\n```",
    "[link](https://example.com/path?q=1&r=2 \"a title\") and <https://auto.example> and <mail@example.com>",
    "[rel](/c/abc/) [anchor](#frag) [query](?q=1) [proto-relative](//example.com/x)",
    "![a cat](https://example.com/cat.png) ![](https://example.com/empty-alt.png)",
    "[click](javascript:alert(1)) [c2](JaVaScRiPt:alert(1)) [c3](vbscript:msgbox(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[ref link][r]\n\n[r]: javascript:alert(1)\n\n[ok][s]\n\n[s]: https://example.com",
    '<img src="x" onerror="alert(1)"> <a href="#" onclick="alert(1)">x</a> <div onmouseover="alert(1)">hover</div>',
    "<script>alert(1)</script>\n\n<style>body{display:none}</style>",
    '[x](https://example.com "title\\" onmouseover=\\"alert(1)")',
    "line one  \nline two\\\nline three\n\n---\n\n***",
    "Entities: &copy; &amp; &#35; &nbsp;x &unknown; \\*escaped\\*",
    "Text with a | pipe that is no table\n\nand `` code with ` backtick ``",
    "1) paren list\n2) second\n\n- a\n\n  continued paragraph\n\n      indented in list",
]


SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


def chat_page(page: Page, live_app, size: str = "desktop") -> None:
    page.set_viewport_size(SIZES[size])
    conversation, _ = seed_conversation(title="Markdown")
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    expect(page.locator("[data-composer-input]")).to_be_enabled()


def test_the_browser_renders_every_construct_exactly_like_the_server(live_app, page: Page):
    chat_page(page, live_app)
    server = [render_markdown(source) for source in CORPUS]
    mismatches = page.evaluate(
        """async ([module, sources, server]) => {
            const { renderMarkdown } = await import(module);
            const found = [];
            sources.forEach((source, i) => {
                const expected = document.createElement("template");
                expected.innerHTML = server[i];
                const actual = document.createElement("div");
                actual.append(renderMarkdown(source));
                const wanted = document.createElement("div");
                wanted.append(expected.content);
                if (!actual.isEqualNode(wanted)) found.push({ source, browser: actual.innerHTML, server: wanted.innerHTML });
            });
            return found;
        }""",
        [MARKDOWN_MODULE, CORPUS, server],
    )
    assert mismatches == []
    # The comparison can tell a difference: the same corpus against a different rendering is one.
    assert page.evaluate(
        """async ([module, html]) => {
            const { renderMarkdown } = await import(module);
            const wanted = document.createElement("template");
            wanted.innerHTML = html;
            return renderMarkdown("**bold**").isEqualNode(wanted.content);
        }""",
        [MARKDOWN_MODULE, render_markdown("*bold*")],
    ) is False


# Markup markdown-it never writes (raw HTML is off): the second layer, nh3 on the server and
# DOMPurify in the browser, must cut it back the same way.
HOSTILE_HTML = [
    '<img src="x" onerror="alert(1)">',
    '<svg onload="alert(1)"><text>svg text</text></svg>',
    "<math><mi>x</mi></math>",
    '<iframe src="https://example.com"></iframe>after',
    "<script>alert(1)</script>kept",
    "<style>p{color:red}</style>kept",
    '<a href="javascript:alert(1)">js</a>',
    '<a href="JAVASCRIPT:alert(1)" title="t">js</a>',
    '<a href="data:text/html,x">data</a>',
    '<a href="vbscript:x">vb</a>',
    '<a href="mailto:a@example.com">mail</a>',
    '<a href="/c/1/" onclick="alert(1)" target="_self" rel="opener">rel</a>',
    '<a href="ftp://example.com/f">ftp</a>',
    '<p class="code-block" id="x" style="color:red" title="t">p</p>',
    '<div class="code-block"><div class="code-head"><span class="code-lang">py</span></div></div>',
    '<div class="code-block evil">x</div><span class="hljs-keyword">x</span>',
    '<code class="language-py">x</code><code class="language-py onclick">y</code><code class="lang-py">z</code>',
    '<table><tbody><tr><td class="align-right">1</td><td style="color:red" class="align-middle">2</td></tr></tbody></table>',
    '<ol start="3" type="a" reversed><li>x</li></ol>',
    '<button type="button" onclick="alert(1)">button</button><input value="x"><form action="/x">f</form>',
    '<details open><summary>s</summary>d</details>',
    '<p data-x="1" aria-label="l">attrs</p>',
    '<a href="https://example.com/a?b=1&amp;c=2">amp</a>',
    "<!-- a comment -->after",
    "<template><p>t</p></template><noscript>n</noscript><textarea>ta</textarea><title>ti</title>",
    "<select><option>o</option></select><object>ob</object><xmp><b>x</b></xmp><noembed>ne</noembed>",
    "<p lang=\"en\" dir=\"rtl\">lang</p><h1 id=\"x\" class=\"y\">h</h1>",
]


def test_the_browser_sanitiser_cuts_hostile_markup_back_like_the_server(live_app, page: Page):
    chat_page(page, live_app)
    server = [sanitised_html(html) for html in HOSTILE_HTML]
    mismatches = page.evaluate(
        """async ([module, hostile, server]) => {
            const { sanitised } = await import(module);
            const found = [];
            hostile.forEach((html, i) => {
                const actual = document.createElement("div");
                actual.append(sanitised(html));
                const expected = document.createElement("template");
                expected.innerHTML = server[i];
                const wanted = document.createElement("div");
                wanted.append(expected.content);
                // A removed element leaves its text as a node of its own: compare merged text.
                actual.normalize();
                wanted.normalize();
                if (!actual.isEqualNode(wanted)) found.push({ html, browser: actual.innerHTML, server: wanted.innerHTML });
            });
            return found;
        }""",
        [MARKDOWN_MODULE, HOSTILE_HTML, server],
    )
    assert mismatches == []
    # DOMPurify parses the markup in an inert document of the page, and chromium reports the
    # handlers and styles in it as refused by the Content-Security-Policy (a third layer: had one
    # got through, it would not have run). Markdown itself never writes any (the other tests).
    refused = ("Executing inline event handler", "Applying inline style")
    assert page.csp_violations and all(text.startswith(refused) for text in page.csp_violations)
    page.csp_violations.clear()


def test_rendering_a_reply_delta_by_delta_ends_exactly_like_the_server(live_app, page: Page):
    # Block by block, parsing again only the last blocks (or all of it once a link reference
    # definition shows up): every step matches a whole rendering, and the last one the server's.
    reply = "\n\n".join(CORPUS[1:]) + "\r\nA CRLF line\r\n\n- list\n- continued later"
    chat_page(page, live_app)
    result = page.evaluate(
        """async ([module, reply, server]) => {
            const { decorateMarkdown, newRendering, renderInto, renderMarkdown } = await import(module);
            const live = document.createElement("div");
            const state = newRendering();
            let steps = 0, wrong = null;
            for (let end = 7; end < reply.length + 7; end += 7) {
                const source = reply.slice(0, end);
                renderInto(live, source, state);
                steps += 1;
                const whole = document.createElement("div");
                whole.append(renderMarkdown(source));
                decorateMarkdown(whole);
                if (!wrong && whole.innerHTML !== live.innerHTML) wrong = { source, whole: whole.innerHTML, live: live.innerHTML };
            }
            const settled = document.createElement("div");
            settled.innerHTML = server;
            decorateMarkdown(settled);
            return { steps, wrong, same: settled.innerHTML === live.innerHTML };
        }""",
        [MARKDOWN_MODULE, reply, render_markdown(reply)],
    )
    assert result["wrong"] is None
    assert result["same"] is True
    assert result["steps"] > 100


STREAMED = (
    "Here is the plan:\n\n"
    "```python\n"
    "def greet(name):\n"
    "    return f\"Hello, {name}!\"\n"
    "```\n\n"
    "| Step | Owner |\n"
    "|:-----|------:|\n"
    "| Draft | AUMA |\n"
    "| Review | Elion |\n\n"
    "Done."
)


def streamed_chunks(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def live_body(page: Page):
    return page.locator(".message-assistant").last.locator(".message-body")


@pytest.mark.parametrize("size", SIZES)
def test_a_streamed_code_block_and_table_render_before_done_and_do_not_change_after(
    live_app, page: Page, scripted_server, size
):
    chunks = streamed_chunks(STREAMED)
    hold = threading.Event()
    # Every chunk is out, then the stream waits: the bubble is still live (no `done`).
    scripted_server.script(
        ScriptedReply(chunks=chunks, hold=hold, hold_after_chunks=len(chunks), delay_between_chunks=0.02)
    )
    chat_page(page, live_app, size)
    send(page, "Plan it in a table")
    streaming = page.locator(".message-assistant.status-streaming")
    expect(streaming.locator(".message-body p").last).to_have_text("Done.")
    # Before `done`: a real code block (labelled, highlighted, with Copy) and a real table.
    expect(streaming.locator("pre > code.language-python.hljs .hljs-keyword").first).to_have_text("def")
    expect(streaming.locator(".code-lang")).to_have_text("python")
    expect(streaming.locator("[data-code-copy]")).to_have_count(1)
    expect(streaming.locator("table th")).to_have_text(["Step", "Owner"])
    expect(streaming.locator("table td")).to_have_text(["Draft", "AUMA", "Review", "Elion"])
    assert "```" not in streaming.locator(".message-body").inner_text()
    live_html = streaming.locator(".message-body").inner_html()
    live_box = streaming.locator(".message-body").bounding_box()

    hold.set()
    wait_settled(page)
    settled = page.locator(".message-assistant.status-complete")
    expect(settled).to_have_count(1)
    # The server's rendering replaced the bubble, and nothing in it changed.
    assert settled.locator(".message-body").inner_html() == live_html
    box = settled.locator(".message-body").bounding_box()
    assert (box["width"], box["height"]) == (live_box["width"], live_box["height"])
    message = Message.objects.get(role=Role.ASSISTANT, status=MessageStatus.COMPLETE)
    assert message.content == STREAMED
    assert page.js_errors == []


def test_a_reply_rendered_mid_stream_by_the_server_continues_as_markdown(live_app, page: Page, scripted_server):
    chunks = ["Intro\n\n```js\n", "const a = 1;\n", "```\n\nAfter."]
    hold = threading.Event()
    scripted_server.script(ScriptedReply(chunks=chunks, hold=hold, hold_after_chunks=2, delay_between_chunks=0.02))
    chat_page(page, live_app)
    send(page, "Some code")
    streaming = page.locator(".message-assistant.status-streaming")
    expect(streaming.locator("pre code")).to_have_text("const a = 1;")
    # Reloaded mid-stream: the server sends the text so far as plain text; it is shown as Markdown.
    page.evaluate("sessionStorage.clear()")
    wait_until(lambda: Message.objects.filter(role=Role.ASSISTANT, content="".join(chunks[:2])).exists())
    page.reload()
    expect(streaming.locator(".message-body.markdown pre code.hljs")).to_have_text("const a = 1;")
    hold.set()
    wait_settled(page)
    expect(page.locator(".message-assistant .message-body p")).to_have_text(["Intro", "After."])
    assert page.js_errors == []


def test_hostile_markdown_streamed_into_a_bubble_never_runs(live_app, page: Page, scripted_server):
    dialogs = DialogWatch(page)
    hostile = (
        "Look: <img src=x onerror=\"window.__pwned='img'; alert('img')\">\n\n"
        "[click me](javascript:window.__pwned='link') and ![pic](javascript:alert('image'))\n\n"
        "```\"><img src=x onerror=\"window.__pwned='fence'\">\n"
        "code\n"
        "```\n\n"
        "<a href=\"javascript:alert('raw')\">raw</a>"
    )
    chunks = streamed_chunks(hostile, size=9)
    hold = threading.Event()
    scripted_server.script(ScriptedReply(chunks=chunks, hold=hold, hold_after_chunks=len(chunks)))
    chat_page(page, live_app)
    send(page, "Try to break the page")
    streaming = page.locator(".message-assistant.status-streaming .message-body")
    expect(streaming.locator("pre code")).to_have_text("code")

    def assert_inert(where: str) -> None:
        assert page.locator(".message-assistant img, .message-assistant [onerror]").count() == 0, where
        assert page.locator(".message-assistant a[href^='javascript' i]").count() == 0, where
        # Clicking what was meant to be a link runs nothing: it is text.
        page.get_by_text("[click me](javascript:", exact=False).first.click()
        assert page.evaluate("window.__pwned") is None, where
        assert dialogs.opened == [], where

    assert_inert("while streaming")
    hold.set()
    wait_settled(page)
    assert_inert("settled")
    assert page.js_errors == []


@pytest.mark.parametrize("size", SIZES)
def test_copy_puts_the_code_blocks_text_on_the_clipboard(live_app, page: Page, scripted_server, size):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_app.url)
    code = 'for i in range(3):\n    print("<b>", i)'
    scripted_server.script(ScriptedReply(text=f"Try this:\n\n```python\n{code}\n```\n\nand this:\n\n```\nplain\n```"))
    chat_page(page, live_app, size)
    send(page, "Some code please")
    wait_settled(page)
    settled = page.locator(".message-assistant.status-complete")
    buttons = settled.locator("[data-code-copy]")
    expect(buttons).to_have_count(2)
    if size == "phone":
        box = buttons.first.bounding_box()
        assert box["height"] >= 44 and box["width"] >= 44, box
    # Labelled, and worked from the keyboard.
    expect(buttons.first).to_have_accessible_name("Copy python code")
    buttons.first.focus()
    page.keyboard.press("Enter")
    expect(buttons.first).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == code + "\n"
    # Tab goes on to the next code block's Copy (nothing focusable lies between them).
    page.keyboard.press("Tab")
    expect(buttons.last).to_be_focused()
    page.keyboard.press("Space")
    expect(buttons.last).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "plain\n"
    # The feedback goes away again.
    expect(buttons.first).to_have_text("Copy python code")
    # A page that loads with the reply already settled decorates it the same way.
    page.reload()
    expect(settled.locator("[data-code-copy]")).to_have_count(2)
    expect(settled.locator("pre > code.language-python.hljs .hljs-keyword").first).to_have_text("for")
    assert page.js_errors == []
