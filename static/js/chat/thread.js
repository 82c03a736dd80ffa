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

export function updateEstimate() {
  const total = bubbles()
    .filter((b) => !b.hidden)
    .reduce((sum, b) => sum + (Number.parseInt(b.dataset.tokens, 10) || 0), 0);
  estimateValue.textContent = formatCompact(total);
  estimateValue.dataset.value = String(total);
  estimateButton.title = `About ${total.toLocaleString()} tokens in the visible messages (app estimate) — click for request size details`;
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
  for (const cell of panel.querySelectorAll("[data-diag]")) {
    const value = diagnostics[cell.dataset.diag];
    cell.textContent = typeof value === "number" ? value.toLocaleString() : "—";
  }
  panel.querySelector("[data-diagnostics-grid]").hidden = false;
  panel.querySelector("[data-diagnostics-empty]").hidden = true;
}
