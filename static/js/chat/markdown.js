// Elion: assistant Markdown in the browser, rendered exactly like the server does.
//
// elion/base/markdown_rendering.py renders settled replies (markdown-it-py, raw HTML
// off, then nh3 against an allow-list). A reply that is still streaming is rendered
// here with the same parser and rules (markdown-it, vendored) and the same allow-list
// (DOMPurify, vendored), so when the server's rendering replaces the live bubble at
// `done` nothing moves. Both bubbles then get the same decoration: syntax highlighting
// (highlight.js, vendored) and a Copy button on every code block.
//
// Any change to the parser options, the render rules or the allow-list must be made
// in rendering.py too; tests/pages/test_markdown_streaming.py renders one corpus both
// ways and compares the DOM.

import markdownit from "../../vendor/markdown-it/markdown-it.esm.min.js";
import DOMPurify from "../../vendor/dompurify/purify.es.js";
// highlight.js (38 KB compressed) loads only when a code block names a language: a page without one never fetches it.
let hljs = null;
let hljsLoading = null;
const highlighter = () => {
  hljsLoading ??= import("../../vendor/highlight.js/highlight.min.js").then((module) => {
    hljs = module.default;
    return hljs;
  });
  return hljsLoading;
};

// --- the parser (rendering.py `_build_parser`) ------------------------------------

const CODE_LANGUAGE = /^[A-Za-z0-9_+#.-]{1,32}$/;

const md = markdownit("commonmark", { html: false, linkify: false, typographer: false });
md.enable(["table", "strikethrough"]);
const { escapeHtml, unescapeAll } = md.utils;

// rendering.py `code_language`: the first word of the info string, if it is a plain name.
export function codeLanguage(info) {
  const first = unescapeAll(info || "").replace(/^[ \t]+|[ \t]+$/g, "").split(/[ \t]+/)[0];
  return CODE_LANGUAGE.test(first) ? first : "";
}

// rendering.py `code_block_html`.
function codeBlockHtml(code, language) {
  const label = language ? `<span class="code-lang">${language}</span>` : "";
  const languageClass = language ? ` class="language-${language}"` : "";
  return (
    `<div class="code-block"><div class="code-head">${label}</div>` +
    `<pre><code${languageClass}>${escapeHtml(code)}</code></pre></div>\n`
  );
}

// rendering.py `_alignment_as_class`: the pages' Content-Security-Policy refuses style attributes.
md.core.ruler.push("alignment_as_class", (state) => {
  for (const token of state.tokens) {
    if (token.type !== "th_open" && token.type !== "td_open") continue;
    const style = token.attrGet("style");
    if (!style?.startsWith("text-align:")) continue;
    token.attrs = token.attrs.filter(([name]) => name !== "style");
    token.attrSet("class", `align-${style.slice("text-align:".length)}`);
  }
});
md.renderer.rules.fence = (tokens, idx) => codeBlockHtml(tokens[idx].content, codeLanguage(tokens[idx].info));
md.renderer.rules.code_block = (tokens, idx) => codeBlockHtml(tokens[idx].content, "");
// Images become plain links: a reply must not make the browser fetch a third-party URL.
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  const src = token.attrGet("src") || "";
  const alt = self.renderInlineAsText(token.children || [], options, env) || src;
  return `<a href="${escapeHtml(src)}">${escapeHtml(alt)}</a>`;
};

// --- the allow-list (rendering.py ALLOWED_TAGS / ALLOWED_ATTRIBUTES / _allowed_attribute) ---

const ALLOWED_TAGS = [
  "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote",
  "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
  "table", "thead", "tbody", "tr", "th", "td", "div", "span",
];
const ALLOWED_ATTRIBUTES = {
  a: ["href", "title"],
  ol: ["start"],
  th: ["class"],
  td: ["class"],
  code: ["class"],
  div: ["class"],
  span: ["class"],
};
const ALIGNMENT_CLASSES = new Set(["align-left", "align-center", "align-right"]);
const ELEMENT_CLASSES = {
  div: new Set(["code-block", "code-head"]),
  span: new Set(["code-lang"]),
  th: ALIGNMENT_CLASSES,
  td: ALIGNMENT_CLASSES,
};

function allowedAttribute(element, attribute, value) {
  if (!ALLOWED_ATTRIBUTES[element]?.includes(attribute)) return false;
  if (element === "code" && attribute === "class") {
    return value.startsWith("language-") && CODE_LANGUAGE.test(value.slice(9));
  }
  if (attribute === "class") return ELEMENT_CLASSES[element].has(value);
  return true;
}

const purifier = DOMPurify(window);
purifier.addHook("uponSanitizeAttribute", (node, data) => {
  if (!allowedAttribute(node.nodeName.toLowerCase(), data.attrName, data.attrValue)) data.keepAttr = false;
});
// nh3's link_rel and set_tag_attribute_values, in the order nh3 writes them.
purifier.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName !== "A") return;
  node.setAttribute("target", "_blank");
  node.setAttribute("rel", "noopener noreferrer nofollow");
});
purifier.setConfig({
  ALLOWED_TAGS,
  ALLOWED_ATTR: ["href", "title", "start", "class"],
  // nh3's url_schemes: http, https and mailto, and relative URLs.
  ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  // rendering.py CLEAN_CONTENT_TAGS: dropped with everything in them.
  FORBID_CONTENTS: ["script", "style", "svg", "math", "xmp"],
  RETURN_DOM_FRAGMENT: true,
});

// rendering.py `sanitised_html`: HTML cut back to what the Markdown rendering writes (a DocumentFragment).
export function sanitised(html) {
  return purifier.sanitize(html);
}

// Markdown source in, sanitised DOM out (a DocumentFragment, not yet decorated).
export function renderMarkdown(source) {
  return sanitised(md.render(source || ""));
}

// --- decoration: highlighting and Copy, the same on streamed and settled bubbles -----

// Highlighting the same code twice gives the same HTML; while a reply streams only the
// growing block is new, so earlier blocks come from here.
const highlighted = new Map();
const HIGHLIGHT_CACHE_LIMIT = 200;

function highlightHtml(language, text) {
  const key = `${language}\u0000${text}`;
  let html = highlighted.get(key);
  if (html === undefined) {
    html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    if (highlighted.size >= HIGHLIGHT_CACHE_LIMIT) highlighted.delete(highlighted.keys().next().value);
    highlighted.set(key, html);
  }
  return html;
}

function copyButton(language) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "code-copy";
  button.dataset.codeCopy = "";
  const hint = document.createElement("span");
  hint.className = "visually-hidden";
  hint.textContent = language ? ` ${language} code` : " code";
  button.append("Copy", hint);
  return button;
}

function decorateCodeBlock(block) {
  const head = block.querySelector(":scope > .code-head");
  const code = block.querySelector(":scope > pre > code");
  if (!head || !code || head.querySelector("[data-code-copy]")) return;
  const language = block.querySelector(":scope > .code-head > .code-lang")?.textContent || "";
  // Only a language the fence names: guessing would flip between languages as a reply grows.
  if (language && hljs) highlightCode(code, language);
  else if (language) highlighter().then(() => highlightCode(code, language));
  head.append(copyButton(language));
}

function highlightCode(code, language) {
  if (code.classList.contains("hljs") || !hljs.getLanguage(language)) return;
  code.innerHTML = highlightHtml(language, code.textContent);
  code.classList.add("hljs");
}

// Highlight and add Copy to every code block under `root` not done yet.
export function decorateMarkdown(root) {
  if (root.matches?.(".code-block")) decorateCodeBlock(root);
  for (const block of root.querySelectorAll(".code-block")) decorateCodeBlock(block);
}

// --- Copy ---------------------------------------------------------------------------

const COPIED_FOR_MS = 2000;

function copyBySelection(text) {
  // navigator.clipboard needs a secure context; a LAN http:// page still has execCommand.
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "visually-hidden";
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    copied = false;
  }
  area.remove();
  return copied;
}

// The text on the clipboard; answers whether it got there (for any Copy on the page).
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return copyBySelection(text);
  }
}

function showCopied(button, copied) {
  const hint = button.querySelector(".visually-hidden");
  if (!button.copiedTimer) button.restoreHint = hint?.textContent || "";
  clearTimeout(button.copiedTimer);
  button.firstChild.textContent = copied ? "Copied" : "Copy failed";
  if (hint) hint.textContent = "";
  button.classList.add("is-copied");
  button.copiedTimer = setTimeout(() => {
    button.copiedTimer = 0;
    button.firstChild.textContent = "Copy";
    if (hint) hint.textContent = button.restoreHint;
    button.classList.remove("is-copied");
  }, COPIED_FOR_MS);
}

document.addEventListener("click", async (event) => {
  const button = event.target.closest?.("[data-code-copy]");
  if (!button) return;
  const code = button.closest(".code-block")?.querySelector(":scope > pre > code");
  if (!code) return;
  showCopied(button, await copyText(code.textContent));
});

// --- streaming ----------------------------------------------------------------------
//
// A reply being written is rendered again at most once a frame, block by block: the
// text is parsed into top-level blocks (a paragraph, a list, a table, a code block…),
// each block's HTML is sanitised and decorated on its own, and a block whose HTML did
// not change keeps its DOM (a text selection, the focus on a Copy button) and is not
// sanitised or highlighted again. Appending text only ever changes the last blocks, so
// only the text from the second-to-last block on is parsed again — unless the reply
// holds a link reference definition (`[x]: url`), which can change any earlier block:
// then all of it is. Rendering block by block gives the same HTML as rendering the
// whole (markdown-it renders a block from its own tokens).

const REFERENCE_DEFINITION = /^ {0,3}\[(?:[^\]\\]|\\.)+\]:/m;
const REPARSED_BLOCKS = 2;

// markdown-it's own input normalisation, done first so offsets into the text hold.
const normalised = (source) => source.replace(/\r\n?/g, "\n").replace(/\0/g, "\uFFFD");

function lineStarts(text) {
  const starts = [0];
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) starts.push(at + 1);
  return starts;
}

// The top-level blocks of `text`: each one's HTML and where it starts (offset into `text`).
function parseBlocks(text, offset) {
  const env = {};
  const tokens = md.parse(text, env);
  const starts = lineStarts(text);
  const blocks = [];
  let first = 0;
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i];
    if (token.level !== 0 || token.nesting === 1) continue;
    const own = tokens.slice(first, i + 1);
    // (A block with no source lines recorded has no known start: the next render parses all.)
    const start = own[0].map ? offset + starts[own[0].map[0]] : null;
    blocks.push({ start, html: md.renderer.render(own, md.options, env) });
    first = i + 1;
  }
  return blocks;
}

export function newRendering() {
  return { source: "", blocks: [] };
}

// Render `source` into `body`; `state` (from `newRendering`) carries the blocks shown so far.
export function renderInto(body, source, state = newRendering()) {
  const text = normalised(source || "");
  const appended = text.startsWith(state.source) && !REFERENCE_DEFINITION.test(text);
  let kept = appended ? Math.max(0, state.blocks.length - REPARSED_BLOCKS) : 0;
  if (kept && state.blocks[kept].start === null) kept = 0;
  const from = kept ? state.blocks[kept].start : 0;
  const blocks = [...state.blocks.slice(0, kept), ...parseBlocks(text.slice(from), from)];
  let same = kept;
  while (same < blocks.length && same < state.blocks.length && blocks[same].html === state.blocks[same].html) {
    blocks[same] = state.blocks[same];
    same += 1;
  }
  // The first rendering: what the body held (the typing dots, the server's plain text) goes.
  if (!state.blocks.length) body.replaceChildren();
  for (const gone of state.blocks.slice(same)) for (const node of gone.nodes) node.remove();
  const added = document.createDocumentFragment();
  for (const block of blocks.slice(same)) {
    const fragment = sanitised(block.html);
    decorateMarkdown(fragment);
    block.nodes = [...fragment.childNodes];
    added.append(fragment);
  }
  body.append(added);
  state.source = text;
  state.blocks = blocks;
  if (body.classList.contains("plain")) body.classList.replace("plain", "markdown");
}

class LiveMarkdown {
  constructor(body, source) {
    this.body = body;
    this.source = source;
    this.frame = 0;
    this.state = newRendering();
    this.wrapRender = null;
  }

  append(text) {
    this.source += text;
    if (!this.frame) this.frame = requestAnimationFrame(() => this.render());
    return this.source;
  }

  render() {
    this.frame = 0;
    if (!this.body.isConnected) return;
    const after = this.wrapRender?.();
    renderInto(this.body, this.source, this.state);
    after?.();
  }
}

const live = new WeakMap();

// The live rendering of a streaming reply's body; the text shown so far (a bubble the
// server rendered mid-stream holds it as plain text) is where it starts.
export function liveMarkdown(body) {
  let entry = live.get(body);
  if (!entry) {
    const source = body.classList.contains("plain") ? body.textContent : "";
    entry = new LiveMarkdown(body, source);
    live.set(body, entry);
  }
  return entry;
}

// --- the page -----------------------------------------------------------------------

function prepare(root) {
  decorateMarkdown(root);
  // A reply still streaming when the server rendered the page arrives as plain text.
  const streaming = root.querySelectorAll?.(".message-assistant.status-streaming > .message-body.plain") || [];
  for (const body of streaming) {
    if (!body.querySelector(".typing") && body.textContent) liveMarkdown(body).render();
  }
}

function watch(list) {
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) if (node.nodeType === Node.ELEMENT_NODE) prepare(node);
    }
  }).observe(list, { childList: true, subtree: true });
}

prepare(document);
const messages = document.querySelector("[data-messages]");
if (messages) watch(messages);
