// Elion chat: versions ("‹ i / n ›" on a message whose parent has several children, and "Later turns"
// after a rewind), the per-message "⋯" actions menu with Copy, and the rewind confirmation dialog.
// A switch only moves the conversation's head (POST …/switch/); the window is then rendered again
// by the server (GET /c/<id>/window/?around=<id>), so the bubbles stay the server's own.

import { copyText } from "./markdown.js";
import { apiJson } from "./net.js";
import { findBubble, list, loadWindowAround, showNotice } from "./thread.js";

const root = document.querySelector("[data-chat]");
const conversationId = root?.dataset.conversationId;
const busy = () => root?.dataset.busy === "true";

// --- switching versions -------------------------------------------------------------

let switching = false;

async function switchTo(button) {
  const targetId = button.dataset.versionId;
  if (!targetId || switching || busy()) return;
  const bubble = button.closest(".message");
  const step = button.dataset.versionStep || "";
  const laterTurns = button.hasAttribute("data-later-turns");
  // The switcher stays where it is on screen: the new version takes the old one's place.
  const offset = bubble?.getBoundingClientRect().top ?? 0;
  switching = true;
  button.disabled = true;
  try {
    await apiJson("POST", `/api/conversations/${conversationId}/switch/`, { message_id: targetId });
    // "Later turns" shows the turn after the rewound-to reply; a version step, the version itself.
    const shown = await loadWindowAround(laterTurns ? bubble.dataset.messageId : targetId);
    const fresh = findBubble(laterTurns ? nextBubbleId(bubble.dataset.messageId) : targetId) || shown;
    if (fresh) {
      list.scrollTop += fresh.getBoundingClientRect().top - offset;
      focusAfterSwitch(fresh, step);
    }
  } catch (error) {
    button.disabled = false;
    showNotice(error.message);
  } finally {
    switching = false;
  }
}

function nextBubbleId(messageId) {
  const after = findBubble(messageId)?.nextElementSibling;
  return after?.classList.contains("message") ? after.dataset.messageId : messageId;
}

// Keyboard users keep their place: the same step of the new version's switcher (or the other one
// at either end), else the bubble's menu button.
function focusAfterSwitch(bubble, step) {
  const steps = [...bubble.querySelectorAll("[data-version-step]")];
  const same = steps.find((b) => b.dataset.versionStep === step && !b.disabled);
  const other = steps.find((b) => !b.disabled);
  const target = same || other || bubble.querySelector("[data-menu-toggle]");
  target?.focus({ preventScroll: true });
}

// --- the "⋯" actions menu ---------------------------------------------------------

function menuParts(holder) {
  return { toggle: holder.querySelector("[data-menu-toggle]"), menu: holder.querySelector("[data-menu]") };
}

function closeMenu(holder, { focusToggle = false } = {}) {
  const { toggle, menu } = menuParts(holder);
  if (!menu || menu.hidden) return;
  menu.hidden = true;
  toggle.setAttribute("aria-expanded", "false");
  holder.classList.remove("is-open");
  if (focusToggle) toggle.focus();
}

function closeAllMenus(except = null) {
  for (const holder of list.querySelectorAll("[data-message-menu].is-open")) {
    if (holder !== except) closeMenu(holder);
  }
}

const menuItems = (menu) => [...menu.querySelectorAll("[role=menuitem]")].filter((b) => !b.disabled && b.offsetParent);

// A menu wider than the room beside its toggle (the owner's bubbles on a phone) slides back onto the screen.
const SCREEN_MARGIN = 8;

function keepMenuOnScreen(menu) {
  menu.style.transform = "";
  const box = menu.getBoundingClientRect();
  const width = document.documentElement.clientWidth;
  let shift = 0;
  if (box.right > width - SCREEN_MARGIN) shift = width - SCREEN_MARGIN - box.right;
  if (box.left + shift < SCREEN_MARGIN) shift = SCREEN_MARGIN - box.left;
  if (shift) menu.style.transform = `translateX(${Math.round(shift)}px)`;
}

function openMenu(holder, { focus = "first" } = {}) {
  const { toggle, menu } = menuParts(holder);
  closeAllMenus(holder);
  menu.hidden = false;
  toggle.setAttribute("aria-expanded", "true");
  holder.classList.add("is-open");
  // Near the bottom of the transcript the menu opens upwards, so it is never cut off.
  holder.classList.remove("opens-up");
  if (menu.getBoundingClientRect().bottom > list.getBoundingClientRect().bottom) holder.classList.add("opens-up");
  keepMenuOnScreen(menu);
  const items = menuItems(menu);
  (focus === "last" ? items.at(-1) : items[0])?.focus();
}

function menuKeydown(event) {
  const holder = event.target.closest("[data-message-menu]");
  if (!holder) return;
  const { toggle, menu } = menuParts(holder);
  if (event.target === toggle && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
    event.preventDefault();
    openMenu(holder, { focus: event.key === "ArrowUp" ? "last" : "first" });
    return;
  }
  if (menu.hidden || !menu.contains(event.target)) return;
  const items = menuItems(menu);
  const at = items.indexOf(event.target);
  const moveTo = {
    ArrowDown: items[(at + 1) % items.length],
    ArrowUp: items[(at - 1 + items.length) % items.length],
    Home: items[0],
    End: items.at(-1),
  }[event.key];
  if (moveTo) {
    event.preventDefault();
    moveTo.focus();
  } else if (event.key === "Escape") {
    event.preventDefault();
    closeMenu(holder, { focusToggle: true });
  } else if (event.key === "Tab") {
    closeMenu(holder);
  }
}

// --- Copy -------------------------------------------------------------------------

// The text the owner reads: the body as rendered, without controls (a code block's Copy
// button, a language label marked `data-copy-skip`).
function messageText(bubble) {
  const body = bubble.querySelector(".message-body");
  if (!body) return "";
  if (body.classList.contains("plain")) return body.textContent;
  const copy = body.cloneNode(true);
  for (const el of copy.querySelectorAll("button, [data-copy-skip], [aria-hidden='true']")) el.remove();
  // innerText keeps paragraph and line breaks, but only for laid-out elements.
  const holder = document.createElement("div");
  holder.style.cssText = "position:fixed;left:-9999px;top:0;white-space:normal;";
  holder.append(copy);
  document.body.append(holder);
  const text = copy.innerText;
  holder.remove();
  return text.replace(/\n{3,}/g, "\n\n").trim();
}

// The message as it was written — its Markdown (`#`, `-`, code fences) — from the server; the
// rendered text only when that cannot be had.
async function messageMarkdown(bubble) {
  const conversationId = document.querySelector("[data-chat]")?.dataset.conversationId;
  const id = bubble.dataset.messageId;
  if (!conversationId || !id) return messageText(bubble);
  try {
    const response = await fetch(`/c/${conversationId}/messages/${encodeURIComponent(id)}/markdown/`, {
      credentials: "same-origin",
      cache: "no-store",
    });
    if (response.ok) return await response.text();
  } catch {
    // offline: the rendered text below
  }
  return messageText(bubble);
}

async function copyMessage(bubble) {
  const feedback = bubble.querySelector("[data-copied]");
  const copied = await copyText(await messageMarkdown(bubble));
  if (feedback) {
    feedback.textContent = copied ? "Copied" : "Copy failed";
    feedback.classList.toggle("is-error", !copied);
    clearTimeout(feedback.hideTimer);
    feedback.hideTimer = setTimeout(() => {
      feedback.textContent = "";
    }, 2000);
  }
}

// --- the rewind dialog --------------------------------------------------------------

let dialog = null;

function rewindDialog() {
  if (dialog) return dialog;
  dialog = document.createElement("dialog");
  dialog.className = "confirm-dialog";
  dialog.dataset.rewindDialog = "";
  dialog.setAttribute("aria-labelledby", "rewind-dialog-title");
  dialog.setAttribute("aria-describedby", "rewind-dialog-text");
  dialog.innerHTML = `
    <form method="dialog" class="confirm-dialog-body">
      <h2 id="rewind-dialog-title">Rewind to this reply?</h2>
      <p id="rewind-dialog-text">This reply becomes the end of the conversation, and your next message
        continues from it. Nothing is deleted: the later turns stay reachable through the version
        switcher — “Later turns” on this reply, and “‹ ›” once you send from here.</p>
      <div class="confirm-dialog-actions">
        <button type="submit" value="cancel" class="button" data-dialog-cancel>Cancel</button>
        <button type="submit" value="rewind" class="button button-primary" data-dialog-confirm>Rewind</button>
      </div>
    </form>`;
  document.body.append(dialog);
  return dialog;
}

// Resolves true when the owner confirms the rewind (Escape or Cancel: false).
export function rewindConfirmed() {
  const box = rewindDialog();
  return new Promise((resolve) => {
    box.returnValue = "";
    box.addEventListener("close", () => resolve(box.returnValue === "rewind"), { once: true });
    box.showModal();
    box.querySelector("[data-dialog-cancel]").focus();
  });
}

// --- wiring -------------------------------------------------------------------------

export function initMessageMenus() {
  if (!list) return;
  list.addEventListener("click", (event) => {
    const toggle = event.target.closest("[data-menu-toggle]");
    if (toggle) {
      const holder = toggle.closest("[data-message-menu]");
      if (menuParts(holder).menu.hidden) openMenu(holder);
      else closeMenu(holder);
      return;
    }
    const version = event.target.closest("[data-version-id]");
    if (version) {
      switchTo(version);
      return;
    }
    const item = event.target.closest("[role=menuitem]");
    if (item) {
      const holder = item.closest("[data-message-menu]");
      closeMenu(holder, { focusToggle: item.dataset.action === "copy" });
      if (item.dataset.action === "copy") copyMessage(item.closest(".message"));
    }
  });
  list.addEventListener("keydown", menuKeydown);
  document.addEventListener("click", (event) => {
    if (!event.target.closest("[data-message-menu]")) closeAllMenus();
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeAllMenus();
  });
}
