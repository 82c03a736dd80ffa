// Elion chat: the transcript in the page — bubbles, the estimate, the request
// size numbers. Settled bubbles always come from the server's HTML fragment.

import { estimateTokens, formatCompact } from "./net.js";

const root = document.querySelector("[data-chat]");
const conversationId = root?.dataset.conversationId;
export const list = root?.querySelector("[data-messages]");
const threadStart = root?.querySelector("[data-thread-start]");
const notice = root?.querySelector("[data-notice]");
const panel = root?.querySelector("[data-diagnostics-panel]");
const estimateButton = document.querySelector("[data-estimate-button]");
const estimateValue = document.querySelector("[data-estimate]");
const trimWarning = document.querySelector("[data-trim-warning]");
let lastDiagnostics = null;
let draftTokens = 0;

export function showNotice(text) {
  notice.textContent = text;
  notice.hidden = !text;
}

export function nearBottom() {
  return list.scrollHeight - list.scrollTop - list.clientHeight < 160;
}

export function scrollToBottom() {
  list.scrollTop = list.scrollHeight;
}

// While the owner is at the bottom, the thread stays there when its content grows
// later: an image that loads after its reply settled, an artifact card, citations,
// a narrower viewport re-wrapping the text. Scrolling up stops the following.
let following = false;

export function followBottom() {
  following = nearBottom();
  // Only a scroll up stops the following: content that grows between a scroll and its event (an image
  // decoding) leaves scrollTop where it was, and must not read as the owner leaving the bottom.
  let lastTop = list.scrollTop;
  list.addEventListener("scroll", () => {
    const top = list.scrollTop;
    if (nearBottom()) following = true;
    else if (top < lastTop - 1) following = false;
    lastTop = top;
  }, { passive: true });
  const keepAtBottom = () => {
    if (following) scrollToBottom();
  };
  // `load` does not bubble; the capture phase sees every image in the thread.
  list.addEventListener("load", keepAtBottom, true);
  if (!("ResizeObserver" in window)) return;
  const resized = new ResizeObserver(keepAtBottom);
  resized.observe(list);
  const watch = (node) => node.nodeType === Node.ELEMENT_NODE && resized.observe(node);
  for (const child of list.children) watch(child);
  new MutationObserver((records) => {
    for (const record of records) record.addedNodes.forEach(watch);
  }).observe(list, { childList: true });
}

// --- bubbles ------------------------------------------------------------------

export const bubbles = () => [...list.querySelectorAll(".message")];
export const findBubble = (id) => (id ? list.querySelector(`.message[data-message-id="${CSS.escape(id)}"]`) : null);

export function fromTemplate(id) {
  return document.getElementById(id).content.firstElementChild.cloneNode(true);
}

export function makeUserBubble(content) {
  const bubble = fromTemplate("tpl-user-message");
  bubble.querySelector(".message-body").textContent = content;
  bubble.dataset.tokens = String(estimateTokens(content));
  return bubble;
}

export function makeLiveBubble(id) {
  const bubble = fromTemplate("tpl-assistant-message");
  bubble.dataset.messageId = id;
  bubble.id = `message-${id}`;
  return bubble;
}

export function appendBubble(bubble) {
  const stick = nearBottom();
  list.append(bubble);
  threadStart.hidden = true;
  if (stick || bubble.dataset.role === "user") scrollToBottom();
}

export function followingBubbles(bubble) {
  const all = bubbles();
  return all.slice(all.indexOf(bubble));
}

// The page renders a window of the live branch; the server says how many
// estimated tokens lie in the live-branch messages outside it.
const tokensOutside = () => Number.parseInt(root.dataset.tokensOutside, 10) || 0;
const bubbleTokens = (els) => els.reduce((sum, b) => sum + (Number.parseInt(b.dataset.tokens, 10) || 0), 0);

export function updateEstimate() {
  const total = tokensOutside() + bubbleTokens(bubbles().filter((b) => !b.hidden));
  estimateValue.textContent = formatCompact(total);
  estimateValue.dataset.value = String(total);
  estimateButton.title = `About ${total.toLocaleString()} tokens in the visible messages (app estimate) — click for request size details`;
  updateTrimWarning();
}

// The header estimate warns before the next send will trim: the last request's total, plus the reply
// it got and the message being written, would pass the input budget (app estimates, as the panel's).
export function updateTrimWarning(draft) {
  if (draft !== undefined) draftTokens = estimateTokens(draft);
  const d = lastDiagnostics;
  const known = d && typeof d.total_input_tokens === "number" && typeof d.input_budget_tokens === "number";
  const reply = bubbles().filter((b) => b.dataset.role === "assistant" && !b.hidden).at(-1);
  const next = known ? d.total_input_tokens + (Number.parseInt(reply?.dataset.tokens, 10) || 0) + draftTokens : 0;
  const trims = known && next > d.input_budget_tokens;
  estimateButton.classList.toggle("estimate-trims", trims);
  estimateButton.dataset.trimsNext = String(trims);
  if (trimWarning) trimWarning.hidden = !trims;
  if (trims) {
    estimateButton.title = `The next send passes the input budget (about ${next.toLocaleString()} of ${d.input_budget_tokens.toLocaleString()} tokens): Elion will no longer see the oldest messages — click for request size details`;
  }
}

// --- where Elion's view begins ------------------------------------------------------
// A trim leaves the oldest messages out of the request: a divider sits above the first one it kept
// (the conversation's `in_view`, stored by each send), or nowhere when nothing was left out.
export function placeInView(inView) {
  list.querySelector("[data-in-view-divider]")?.remove();
  const first = findBubble(inView?.first_message_id);
  if (!first) return;
  const divider = fromTemplate("tpl-in-view-divider");
  divider.querySelector("[data-out-of-view]").textContent = String(inView.out_of_view ?? "");
  first.before(divider);
}

// Replace a bubble with the server's rendering; answers its status.
export async function refreshBubble(id) {
  const response = await fetch(`/c/${conversationId}/messages/${id}/fragment/`, {
    credentials: "same-origin",
    cache: "no-store",
  });
  if (!response.ok) throw new Error(`Could not load the message (HTTP ${response.status}).`);
  const holder = document.createElement("template");
  holder.innerHTML = (await response.text()).trim();
  const fresh = holder.content.firstElementChild;
  const current = findBubble(id);
  const stick = nearBottom();
  if (current) current.replaceWith(fresh);
  else appendBubble(fresh);
  if (stick) scrollToBottom();
  return fresh.dataset.status;
}

export function renderDiagnostics(diagnostics) {
  if (!diagnostics || typeof diagnostics !== "object") return;
  lastDiagnostics = diagnostics;
  updateTrimWarning();
  for (const cell of panel.querySelectorAll("[data-diag]")) {
    const value = diagnostics[cell.dataset.diag];
    cell.textContent = typeof value === "number" ? value.toLocaleString() : "—";
  }
  panel.querySelector("[data-diagnostics-grid]").hidden = false;
  panel.querySelector("[data-diagnostics-empty]").hidden = true;
}

// --- the window ------------------------------------------------------------------
// Earlier messages load above as the owner scrolls up (or presses "Load earlier
// messages"); "Jump to latest" (and a send from an older window) brings the newest in.

const earlier = root?.querySelector("[data-window-earlier]");
const later = root?.querySelector("[data-window-later]");
const WINDOW_LIMIT = 50;
let loadingEarlier = null;

export const atNewest = () => root.dataset.hasMoreAfter !== "true";

async function fetchWindow(query) {
  const response = await fetch(`/c/${conversationId}/window/${query}`, { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) throw new Error(`Could not load the messages (HTTP ${response.status}).`);
  const holder = document.createElement("template");
  holder.innerHTML = (await response.text()).trim();
  return holder.content.querySelector("[data-window]");
}

function setEdges({ before, after }) {
  if (before !== undefined) {
    root.dataset.hasMoreBefore = String(before);
    earlier.hidden = !before;
  }
  if (after !== undefined) {
    root.dataset.hasMoreAfter = String(after);
    later.hidden = !after;
  }
}

// The transcript after this point is what the page shows as the newest (an edit or a
// retry from an older window makes its turn the end of the live branch).
export function windowBecomesNewest() {
  setEdges({ after: false });
}

export function loadEarlier() {
  if (loadingEarlier || root.dataset.hasMoreBefore !== "true") return loadingEarlier;
  const first = list.querySelector(".message[data-message-id]");
  if (!first) return null;
  loadingEarlier = (async () => {
    try {
      const fragment = await fetchWindow(`?before=${encodeURIComponent(first.dataset.messageId)}&limit=${WINDOW_LIMIT}`);
      const added = [...fragment.querySelectorAll(":scope > .message")];
      // Hold the position: the first bubble stays where it is on screen.
      const offset = first.getBoundingClientRect().top;
      first.before(...fragment.childNodes);
      list.scrollTop += first.getBoundingClientRect().top - offset;
      root.dataset.tokensOutside = String(Math.max(0, tokensOutside() - bubbleTokens(added)));
      setEdges({ before: fragment.dataset.hasMoreBefore === "true" });
      updateEstimate();
    } catch (error) {
      showNotice(error.message);
    } finally {
      loadingEarlier = null;
    }
  })();
  return loadingEarlier;
}

// Replace the window's bubbles with a fetched one (its edges and the estimate outside it too).
function replaceWindow(fragment) {
  for (const el of list.querySelectorAll(".message, [data-compaction-marker]")) el.remove();
  list.append(...fragment.childNodes);
  root.dataset.tokensOutside = fragment.dataset.tokensOutside || "0";
  setEdges({ before: fragment.dataset.hasMoreBefore === "true", after: fragment.dataset.hasMoreAfter === "true" });
  threadStart.hidden = bubbles().length > 0;
  updateEstimate();
  // The address may name a message this window no longer holds.
  const url = new URL(location.href);
  url.search = "";
  url.hash = "";
  history.replaceState(null, "", url);
}

// Replace the window with the newest messages (before a send from an older window).
export async function loadNewest() {
  replaceWindow(await fetchWindow(""));
  scrollToBottom();
}

// Replace the window with one around a live-branch message (after a version switch); answers its bubble.
export async function loadWindowAround(messageId) {
  replaceWindow(await fetchWindow(`?around=${encodeURIComponent(messageId)}&limit=${WINDOW_LIMIT}`));
  return findBubble(messageId);
}

// On load: show the message the address names (a window around it is fetched when
// it is not on the page), the top for "Jump to start", else the newest.
export function placeWindow() {
  const named = /^#message-([0-9a-f-]{36})$/i.exec(location.hash)?.[1];
  if (named && !findBubble(named)) {
    location.replace(`/c/${conversationId}/?around=${encodeURIComponent(named)}#message-${named}`);
    return false;
  }
  const target = findBubble(named || root.dataset.anchorId);
  if (target) target.scrollIntoView({ block: "center" });
  else if (root.dataset.atStart === "true") list.scrollTop = 0;
  else scrollToBottom();
  return true;
}

export function watchWindowTop() {
  earlier?.querySelector("[data-load-earlier]").addEventListener("click", () => loadEarlier());
  const sentinel = earlier?.querySelector("[data-window-sentinel]");
  if (!sentinel || !("IntersectionObserver" in window)) return;
  const observer = new IntersectionObserver(
    (entries) => {
      if (entries.some((entry) => entry.isIntersecting)) loadEarlier()?.then(() => {
        // Still in view (a short window): keep filling upwards.
        const box = sentinel.getBoundingClientRect();
        const view = list.getBoundingClientRect();
        if (!earlier.hidden && box.bottom >= view.top && box.top <= view.bottom) loadEarlier();
      });
    },
    { root: list, rootMargin: "400px 0px 0px 0px" },
  );
  observer.observe(sentinel);
}
