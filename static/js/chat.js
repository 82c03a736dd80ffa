// Elion chat page: live replies over the WebSocket (fetch + SSE when it cannot
// connect), resuming a reply that is still streaming (after a reload, in a
// second tab, or when the connection drops), Stop, edit-and-resend, retry,
// rewind, inline rename and the request size panel. Plain ES module, no build step. The server renders every settled
// bubble; a live bubble shows the reply's Markdown rendered the same way in the browser
// (chat/markdown.js) and then swaps in the server's HTML fragment.

import { apiJson, csrfToken, estimateTokens, newClientId, pendingSends, readSse, sleep } from "./chat/net.js";
import {
  appendBubble,
  atNewest,
  bubbles,
  findBubble,
  followingBubbles,
  list,
  loadNewest,
  makeLiveBubble,
  makeUserBubble,
  nearBottom,
  placeInView,
  placeWindow,
  refreshBubble,
  renderDiagnostics,
  scrollToBottom,
  followBottom,
  showNotice,
  updateEstimate,
  updateTrimWarning,
  watchWindowTop,
  windowBecomesNewest,
} from "./chat/thread.js";
import {
  appendAttachmentNames,
  initAttachments,
  restoreAttachments,
  setAttachDisabled,
  takeAttachments,
  uploading,
} from "./chat/attachments.js";
import { watchProviderUsage } from "./chat/usage.js";
import { initDictation, takeDictated } from "./chat/voice.js";
import { initReadAloud } from "./chat/read_aloud.js";
import { initTalk } from "./chat/talk.js";
import { initMessageMenus, rewindConfirmed } from "./chat/versions.js";
import { liveMarkdown } from "./chat/markdown.js";

const root = document.querySelector("[data-chat]");

const conversationId = root?.dataset.conversationId;
const API = `/api/conversations/${conversationId}`;
const POLL_INTERVAL_MS = 1000;
const POLL_LIMIT = 900;
// The database went away under a reply that had started: the words shown may run past what was stored (the
// stream outlives the last save). A reload shows the stored reply, marked Interrupted, with Retry
// (docs/send_path.md, "After a database outage").
const OUTAGE_NOTE =
  "Elion lost its database while writing this reply: the end shown here may not have been kept. " +
  "Once it is back, reload to see the reply as it was stored, marked Interrupted, with Retry.";
const pending = pendingSends(conversationId, 15 * 60 * 1000);

const threadStart = root?.querySelector("[data-thread-start]");
const composer = root?.querySelector("[data-composer]");
const input = root?.querySelector("[data-composer-input]");
const sendButton = root?.querySelector("[data-send-button]");
const stopButton = root?.querySelector("[data-stop-button]");
// Character Studio: a character pinned for the next message only.
const pinSelect = root?.querySelector("[data-pin-character]");
const panel = root?.querySelector("[data-diagnostics-panel]");
const estimateButton = document.querySelector("[data-estimate-button]");
const titleButton = document.querySelector("[data-title-button]");
const titleInput = document.querySelector("[data-title-input]");

let busy = false;
let activeTurn = null;
let socket = null;
let socketPromise = null;
let socketUnavailable = false;

// --- request size panel -------------------------------------------------------

function setPanelOpen(open) {
  panel.hidden = !open;
  estimateButton.setAttribute("aria-expanded", String(open));
}

// --- the send/retry turn -------------------------------------------------------

function setBusy(value) {
  busy = value;
  input.disabled = value;
  sendButton.disabled = value;
  if (pinSelect) pinSelect.disabled = value;
  setAttachDisabled(value);
  root.dataset.busy = String(value);
  sendButton.hidden = value;
  stopButton.hidden = !value;
  stopButton.disabled = !activeTurn?.assistantId;
  if (!value) input.focus({ preventScroll: true });
}

class Turn {
  // kind: "send" | "retry" | "watch". payload: the WebSocket frame without `type`
  // (a watch: {message_id, after_seq}, following a reply already on the page).
  constructor(kind, payload, { userBubble = null, superseded = [], resumed = false, attachments = [] } = {}) {
    this.kind = kind;
    this.attachments = attachments;
    this.payload = payload;
    this.userBubble = userBubble;
    this.superseded = superseded;
    this.resumed = resumed;
    this.userId = null;
    this.assistantId = kind === "watch" ? payload.message_id : null;
    // Characters of the reply shown so far: the `seq` of the last delta.
    this.seq = kind === "watch" ? payload.after_seq || 0 : 0;
    this.doneSeen = false;
    this.finished = false;
    this.ws = null;
    this.promise = new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  get liveBody() {
    return findBubble(this.assistantId)?.querySelector(".message-body");
  }

  dropSuperseded() {
    for (const el of this.superseded) el.remove();
    this.superseded = [];
  }

  handle(name, data) {
    if (this.finished) return;
    switch (name) {
      case "user_message": {
        this.userId = data.id;
        const existing = findBubble(data.id);
        if (existing && existing !== this.userBubble) {
          this.userBubble?.remove();
          this.userBubble = existing;
        } else if (this.userBubble) {
          this.userBubble.dataset.messageId = data.id;
          this.userBubble.id = `message-${data.id}`;
        }
        this.dropSuperseded();
        break;
      }
      case "assistant_message": {
        const existing = findBubble(data.id);
        // Resuming a reply already shown: its text so far stays, the rest follows.
        const following = this.assistantId === data.id && existing;
        this.assistantId = data.id;
        this.announced = true;
        stopButton.disabled = false;
        this.dropSuperseded();
        if (following) break;
        const live = makeLiveBubble(data.id);
        if (existing) existing.replaceWith(live);
        else appendBubble(live);
        break;
      }
      case "diagnostics":
        renderDiagnostics(data);
        break;
      case "delta":
        // `seq` is where this delta ends; anything not past what is shown is a repeat.
        if (typeof data.seq === "number") {
          if (data.seq <= this.seq) break;
          this.seq = data.seq;
        }
        // A refusal streams as text too; the settled bubble (at `done`) shows it as a refusal.
        if (data.refusal) findBubble(this.assistantId)?.classList.add("is-refusal");
        this.appendText(data.text || "");
        // Talk reads a reply as it streams (chat/talk.js): it follows the reply's growing text.
        document.dispatchEvent(
          new CustomEvent("elion:reply-delta", { detail: { messageId: this.assistantId, kind: this.kind, seq: this.seq } }),
        );
        break;
      case "tool":
        this.showTool(data);
        break;
      case "reasoning":
        this.showReasoning(data.text || "");
        break;
      case "image":
        // Generated images (chat/images.js): partial previews, then the stored image, in the live bubble.
        document.dispatchEvent(new CustomEvent("elion:image", { detail: { messageId: this.assistantId, data } }));
        break;
      case "status":
        // The provider asked us to wait (429/5xx with Retry-After) before the first token.
        if (data.state === "waiting_for_provider") this.showWaiting(data.retry_in);
        break;
      case "error":
        // Nothing started (bad input, a reply already streaming, nothing left to watch).
        if (!this.assistantId || (this.kind === "watch" && !this.announced)) {
          this.fail(data.detail || "The message could not be sent.");
        } else if (data.error === "database_unavailable") this.showError(OUTAGE_NOTE);
        else this.showError(data.detail || "The reply failed.");
        break;
      case "done":
        this.doneSeen = true;
        this.complete(data);
        break;
      default:
        break;
    }
  }

  // The reply so far is rendered as Markdown, at most once a frame, the way the server
  // renders it at `done` (chat/markdown.js), so the bubble does not jump then.
  appendText(text) {
    const body = this.liveBody;
    if (!body || !text) return;
    const rendering = liveMarkdown(body);
    rendering.wrapRender ??= () => {
      const stick = nearBottom();
      return () => stick && scrollToBottom();
    };
    const source = rendering.append(text);
    body.closest(".message").dataset.tokens = String(estimateTokens(source));
  }

  // The provider's reasoning summary, streamed into a collapsed line above the reply;
  // the server's rendering replaces it at `done` ("Thought for N s").
  showReasoning(text) {
    const bubble = findBubble(this.assistantId);
    const body = bubble?.querySelector(".message-body");
    if (!body || !text) return;
    let box = bubble.querySelector("[data-reasoning]");
    if (!box) {
      box = document.createElement("details");
      box.className = "reasoning";
      box.dataset.reasoning = "";
      const summary = document.createElement("summary");
      summary.textContent = "Thinking…";
      const said = document.createElement("div");
      said.className = "reasoning-summary";
      said.dataset.reasoningSummary = "";
      box.append(summary, said);
      body.before(box);
    }
    box.querySelector("[data-reasoning-summary]").append(document.createTextNode(text));
  }

  // The one status chip in the live reply's header (tool use, waiting for the provider).
  statusChip() {
    const meta = findBubble(this.assistantId)?.querySelector(".message-meta");
    if (!meta) return null;
    let chip = meta.querySelector(".tool-chip");
    if (!chip) {
      chip = document.createElement("span");
      chip.className = "badge badge-info tool-chip";
      meta.append(chip);
    }
    return chip;
  }

  showWaiting(seconds) {
    const chip = this.statusChip();
    if (chip) chip.textContent = `Waiting for the provider (${Math.ceil(Number(seconds) || 0)} s)…`;
  }

  showTool({ name, status }) {
    const chip = this.statusChip();
    if (chip) chip.textContent = status === "done" || status === "complete" ? `Used ${name}` : `Using ${name}…`;
  }

  showError(detail) {
    const bubble = findBubble(this.assistantId);
    if (!bubble) return showNotice(detail);
    let box = bubble.querySelector(".message-error");
    if (!box) {
      box = document.createElement("div");
      box.className = "message-error";
      box.setAttribute("role", "alert");
      bubble.append(box);
    }
    box.textContent = detail;
  }

  // The user turn was never stored (bad input, a reply already streaming…):
  // put things back as they were.
  fail(detail) {
    if (this.finished) return;
    this.finished = true;
    for (const el of this.superseded) el.hidden = false;
    if (!this.userId) this.userBubble?.remove();
    if (this.kind === "send" && !this.resumed && !input.value) input.value = this.payload.content;
    if (this.kind === "send" && !this.resumed) restoreAttachments(this.attachments);
    if (this.payload.pinned_character_id && pinSelect && !pinSelect.value) setPinned(this.payload.pinned_character_id);
    if (this.payload.client_message_id) pending.clear(this.payload.client_message_id);
    threadStart.hidden = bubbles().length > 0;
    showNotice(detail);
    this.end();
  }

  async complete({ message_id: messageId, status }) {
    if (this.finished) return;
    this.finished = true;
    const assistantId = messageId || this.assistantId;
    try {
      if (status === "streaming") await pollUntilSettled(assistantId);
      const ids = [this.userId, assistantId].filter(Boolean);
      await Promise.all(ids.map((id) => refreshBubble(id)));
    } catch (error) {
      if (status === "interrupted") this.markInterrupted(assistantId);
      showNotice(error.message);
    }
    if (this.payload.client_message_id) pending.clear(this.payload.client_message_id);
    this.end();
    refreshConversation();
    // Read aloud (chat/read_aloud.js) may speak a reply this page asked for.
    document.dispatchEvent(
      new CustomEvent("elion:reply-settled", { detail: { messageId: assistantId, status, kind: this.kind } }),
    );
  }

  // The server's rendering could not be fetched (its database is away): the live bubble says it ended.
  markInterrupted(id) {
    const bubble = findBubble(id);
    if (!bubble) return;
    bubble.classList.replace("status-streaming", "status-interrupted");
    bubble.dataset.status = "interrupted";
    bubble.querySelector(".badge-live")?.remove();
    const meta = bubble.querySelector(".message-meta");
    if (meta && !meta.querySelector("[data-interrupted-badge]")) {
      const badge = document.createElement("span");
      badge.className = "badge badge-warn";
      badge.dataset.interruptedBadge = "";
      badge.textContent = "Interrupted";
      meta.append(badge);
    }
  }

  // The transport went away mid-turn. The reply keeps running server-side:
  // follow it again from the last `seq` shown (Last-Event-ID), polling as a last resort.
  async transportLost() {
    if (this.finished || this.doneSeen) return;
    if (this.assistantId && !this.rewatched) {
      this.rewatched = true;
      socketUnavailable = true;
      await watchOverSse(this);
      return;
    }
    if (this.assistantId) {
      this.finished = true;
      try {
        await pollUntilSettled(this.assistantId);
        await Promise.all([this.userId, this.assistantId].filter(Boolean).map((id) => refreshBubble(id)));
      } catch (error) {
        showNotice(error.message);
      }
      if (this.payload.client_message_id) pending.clear(this.payload.client_message_id);
      this.end();
    } else if (this.kind === "send") {
      // The frame may or may not have arrived; the client_message_id makes sending again safe.
      socketUnavailable = true;
      await streamOverSse(this);
    } else {
      this.fail("The connection dropped before the retry started. Try again.");
    }
  }

  end() {
    if (activeTurn === this) activeTurn = null;
    updateEstimate();
    setBusy(false);
    this.resolve();
  }
}

async function pollUntilSettled(messageId) {
  for (let i = 0; i < POLL_LIMIT; i += 1) {
    const status = await refreshBubble(messageId);
    if (status !== "streaming") return status;
    await sleep(POLL_INTERVAL_MS);
  }
  throw new Error("The reply is taking unusually long; reload the page to check on it.");
}

// --- transports ---------------------------------------------------------------

function connectSocket() {
  if (socket && socket.readyState === WebSocket.OPEN) return Promise.resolve(socket);
  if (socketPromise) return socketPromise;
  socketPromise = new Promise((resolve) => {
    let settled = false;
    const settle = (value) => {
      if (settled) return;
      settled = true;
      socketPromise = null;
      resolve(value);
    };
    let ws;
    try {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      ws = new WebSocket(`${scheme}://${location.host}/ws/conversations/${conversationId}/`);
    } catch {
      settle(null);
      return;
    }
    const timer = setTimeout(() => {
      try {
        ws.close();
      } catch {
        /* already closed */
      }
      settle(null);
    }, 4000);
    ws.addEventListener("open", () => {
      clearTimeout(timer);
      socket = ws;
      // Show replies started elsewhere (another tab or device) as they stream.
      ws.send(JSON.stringify({ type: "follow" }));
      settle(ws);
    });
    ws.addEventListener("error", () => {
      clearTimeout(timer);
      settle(null);
    });
    ws.addEventListener("close", () => {
      clearTimeout(timer);
      if (socket === ws) socket = null;
      settle(null);
      if (activeTurn && activeTurn.ws === ws) activeTurn.transportLost();
    });
    ws.addEventListener("message", (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      const { type, followed, ...data } = frame;
      if (followed) followFrame(ws, type, data);
      else if (activeTurn && activeTurn.ws === ws) activeTurn.handle(type, data);
    });
  });
  return socketPromise;
}

// A reply started elsewhere: while this page is idle it becomes this page's turn.
function followFrame(ws, type, data) {
  // An older window shows no reply at the end of the thread ("Jump to latest" does).
  if (type === "user_message" && !activeTurn && atNewest()) {
    // A placeholder keeps the order (question, then reply) until the server's rendering arrives.
    const userBubble = makeUserBubble("");
    userBubble.dataset.messageId = data.id;
    userBubble.id = `message-${data.id}`;
    appendBubble(userBubble);
    const turn = new Turn("follow", {}, { userBubble });
    turn.ws = ws;
    activeTurn = turn;
    setBusy(true);
    refreshBubble(data.id).catch(() => {});
  }
  if (activeTurn?.kind === "follow" && activeTurn.ws === ws) activeTurn.handle(type, data);
}

// Follow a reply over SSE, from the characters already shown (Last-Event-ID).
async function watchOverSse(turn) {
  turn.ws = null;
  let response;
  try {
    response = await fetch(`${API}/messages/${turn.assistantId}/stream/`, {
      credentials: "same-origin",
      cache: "no-store",
      headers: { Accept: "text/event-stream", "Last-Event-ID": String(turn.seq) },
    });
  } catch {
    return turn.transportLost();
  }
  if (!response.ok) return turn.transportLost();
  try {
    await readSse(response, (name, data) => turn.handle(name, data));
  } catch {
    /* the stream broke; handled below */
  }
  if (!turn.doneSeen && !turn.finished) await turn.transportLost();
}

async function stopReply() {
  const turn = activeTurn;
  if (!turn?.assistantId) return;
  stopButton.disabled = true;
  try {
    // The reply's own stream then ends with `done` (interrupted), settling the bubble.
    await apiJson("POST", `${API}/messages/${turn.assistantId}/stop/`);
  } catch (error) {
    showNotice(error.message);
    if (activeTurn === turn) stopButton.disabled = false;
  }
}

async function streamOverSse(turn) {
  if (turn.kind === "watch") return watchOverSse(turn);
  turn.ws = null;
  const retry = turn.kind === "retry";
  const url = retry ? `${API}/messages/${turn.payload.message_id}/retry/` : `${API}/messages/`;
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(retry ? {} : turn.payload),
    });
  } catch {
    if (turn.assistantId) return turn.transportLost();
    return turn.fail("Could not reach Elion. Check the connection and try again.");
  }
  if (!response.ok) {
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    return turn.fail(data?.detail || `Sending failed (HTTP ${response.status}).`);
  }
  try {
    await readSse(response, (name, data) => turn.handle(name, data));
  } catch {
    /* the stream broke; handled below */
  }
  if (!turn.doneSeen && !turn.finished) {
    if (turn.assistantId) await turn.transportLost();
    else turn.fail("The connection dropped before the reply started. Try again.");
  }
}

async function runTurn(turn) {
  activeTurn = turn;
  setBusy(true);
  showNotice("");
  const ws = socketUnavailable ? null : await connectSocket();
  if (ws) {
    turn.ws = ws;
    ws.send(JSON.stringify({ type: turn.kind, ...turn.payload }));
  } else {
    socketUnavailable = true;
    await streamOverSse(turn);
  }
  return turn.promise;
}

function setPinned(characterId) {
  if (!pinSelect) return;
  pinSelect.value = characterId ? String(characterId) : "";
  pinSelect.classList.toggle("is-pinned", Boolean(pinSelect.value));
}

function sendContent(content, { parentId, superseded = [], pinnedCharacterId = null, attachments = [], voice = false } = {}) {
  const payload = { content, client_message_id: newClientId() };
  if (voice) payload.voice = true; // spoken (Talk or dictation): stored as metadata.voice
  if (attachments.length) payload.attachment_ids = attachments.map((item) => item.id);
  // parent_id absent: continue from the head; null: a new first message.
  if (parentId !== undefined) payload.parent_id = parentId;
  if (pinnedCharacterId) payload.pinned_character_id = pinnedCharacterId;
  pending.save(payload);
  // Once a turn is sent the New Chat's handoff is part of it: "Start without it" no longer applies.
  document.querySelector("[data-handoff-drop]")?.remove();
  for (const el of superseded) el.hidden = true;
  const userBubble = makeUserBubble(content);
  appendAttachmentNames(userBubble, attachments);
  appendBubble(userBubble);
  updateEstimate();
  return runTurn(new Turn("send", payload, { userBubble, superseded, attachments }));
}

// A reply the provider cut off (status `incomplete`): Continue is an ordinary send asking for the rest.
const CONTINUE_TEXT = "Please continue from where your last reply was cut off.";

function continueReply() {
  return sendContent(CONTINUE_TEXT);
}

function retryReply(bubble) {
  windowBecomesNewest();
  const superseded = followingBubbles(bubble);
  for (const el of superseded) el.hidden = true;
  return runTurn(new Turn("retry", { message_id: bubble.dataset.messageId }, { superseded }));
}

// --- message actions ----------------------------------------------------------

function startEdit(bubble) {
  if (bubble.classList.contains("is-editing")) return;
  const body = bubble.querySelector(".message-body");
  const actions = bubble.querySelector(".message-actions");
  const form = document.createElement("form");
  form.className = "edit-form";
  const area = document.createElement("textarea");
  area.value = body.textContent;
  area.rows = Math.min(12, Math.max(2, area.value.split("\n").length));
  area.setAttribute("aria-label", "Edit message");
  const row = document.createElement("div");
  row.className = "edit-actions";
  const cancel = Object.assign(document.createElement("button"), { type: "button", textContent: "Cancel" });
  cancel.className = "button button-small";
  const save = Object.assign(document.createElement("button"), { type: "submit", textContent: "Send edit" });
  save.className = "button button-small button-primary";
  row.append(cancel, save);
  form.append(area, row);

  const close = () => {
    form.remove();
    body.hidden = false;
    if (actions) actions.hidden = false;
    bubble.classList.remove("is-editing");
  };
  cancel.addEventListener("click", close);
  area.addEventListener("keydown", (event) => {
    if (event.key === "Escape") close();
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const content = area.value;
    if (!content.trim() || busy) return;
    close();
    windowBecomesNewest();
    // Edit-and-resend: a sibling of this turn, sent from the same parent.
    sendContent(content, { parentId: bubble.dataset.parentId || null, superseded: followingBubbles(bubble) });
  });

  bubble.classList.add("is-editing");
  body.hidden = true;
  if (actions) actions.hidden = true;
  body.after(form);
  area.focus();
  area.setSelectionRange(area.value.length, area.value.length);
}

async function rewindTo(bubble) {
  if (!(await rewindConfirmed())) return;
  try {
    await apiJson("POST", `${API}/rewind/`, { message_id: bubble.dataset.messageId });
    // The newest window now ends at this reply (reloading an `?around=` or `#message-`
    // address could name a message the rewind took off the live branch).
    const newest = new URL(`/c/${conversationId}/`, location.origin);
    if (newest.href === location.href) location.reload();
    else location.assign(newest);
  } catch (error) {
    showNotice(error.message);
  }
}

// Fork from here: one Idempotency-Key per message until the fork resolves, so
// a double click or a lost response never makes two forks.
async function forkFrom(bubble, button) {
  const messageId = bubble.dataset.messageId;
  const storageKey = `elion.fork.pending.${messageId}`;
  let key = sessionStorage.getItem(storageKey);
  if (!key) {
    key = newClientId();
    sessionStorage.setItem(storageKey, key);
  }
  button.disabled = true;
  try {
    const response = await fetch(`${API}/fork/`, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "Idempotency-Key": key,
        "X-CSRFToken": csrfToken(),
      },
      body: JSON.stringify({ message_id: messageId }),
    });
    const body = await response.json().catch(() => ({}));
    if (response.ok && body.id) {
      sessionStorage.removeItem(storageKey);
      window.location.assign(`/c/${body.id}/`);
      return;
    }
    if (response.status >= 400 && response.status < 500 && ![401, 403, 429].includes(response.status)) {
      sessionStorage.removeItem(storageKey);
    }
    showNotice(body.detail || "The fork could not be created; try again.");
  } catch {
    showNotice("The connection failed; click Fork again to retry the same fork.");
  } finally {
    button.disabled = false;
  }
}

// --- title -------------------------------------------------------------------

function showTitle(title) {
  const shown = title || "New chat";
  titleButton.textContent = shown;
  titleButton.dataset.title = title;
  titleInput.value = title;
  document.title = `${shown} · Elion`;
  const link = document.querySelector(`[data-conversation-link="${conversationId}"] .conversation-title`);
  if (link) link.textContent = shown;
}

// The first send names an untitled conversation server-side; show that name.
// After a reply: the title a first send gave, and where Elion's view now begins (`in_view`).
async function refreshConversation() {
  try {
    const data = await apiJson("GET", `${API}/`);
    if (!titleButton.dataset.title && data.title && titleInput.hidden) showTitle(data.title);
    placeInView(data.in_view);
    updateTrimWarning();
  } catch {
    /* cosmetic only */
  }
}

function startRename() {
  titleInput.value = titleButton.dataset.title ?? titleInput.value;
  titleButton.hidden = true;
  titleInput.hidden = false;
  titleInput.focus();
  titleInput.select();
}

let renaming = false;
async function finishRename(save) {
  if (titleInput.hidden || renaming) return;
  const title = titleInput.value.trim();
  const before = titleButton.dataset.title ?? "";
  if (save && title !== before) {
    renaming = true;
    try {
      const data = await apiJson("PATCH", `${API}/`, { title });
      showTitle(data.title);
    } catch (error) {
      showNotice(error.message);
    } finally {
      renaming = false;
    }
  }
  titleInput.hidden = true;
  titleButton.hidden = false;
}

// --- wiring -------------------------------------------------------------------

function autosize() {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, window.innerHeight * 0.4)}px`;
}

function init() {
  titleButton.dataset.title = titleInput.value;
  initAttachments({ onError: showNotice });
  initDictation({ input, onError: showNotice, autosize });
  initReadAloud({ onError: showNotice });
  initTalk({ send: (text) => sendContent(text, { voice: true }), stopReply, isBusy: () => busy, onError: showNotice });
  initMessageMenus();

  composer.addEventListener("submit", async (event) => {
    event.preventDefault();
    const content = input.value;
    if (busy) return;
    // Sending from an older window: bring the newest in first, so the new turn appears in place.
    if (!atNewest() && (content.trim() || !uploading())) {
      setBusy(true);
      try {
        await loadNewest();
      } catch (error) {
        showNotice(error.message);
        return;
      } finally {
        setBusy(false);
      }
    }
    if (uploading()) {
      showNotice("Wait for the attachments to finish uploading.");
      return;
    }
    const attachments = takeAttachments();
    if (!content.trim() && !attachments.length) return;
    input.value = "";
    autosize();
    // A pinned character travels with this one message, then the pin clears.
    const pinnedCharacterId = pinSelect?.value ? Number(pinSelect.value) : null;
    setPinned(null);
    sendContent(content, { pinnedCharacterId, attachments, voice: takeDictated() });
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });
  input.addEventListener("input", () => {
    autosize();
    updateTrimWarning(input.value);
  });
  // A quote inserted from Search arrives in the box: grow it to show the quote, the caret after it.
  if (input.value) {
    autosize();
    input.focus({ preventScroll: true });
    input.setSelectionRange(input.value.length, input.value.length);
  }
  pinSelect?.addEventListener("change", () => setPinned(pinSelect.value));
  stopButton.addEventListener("click", stopReply);

  list.addEventListener("click", (event) => {
    if (event.target.closest("[data-open-request-size]")) {
      event.preventDefault();
      setPanelOpen(true);
      return;
    }
    const button = event.target.closest("[data-action]");
    if (!button || busy) return;
    const bubble = button.closest(".message");
    if (!bubble?.dataset.messageId) return;
    const action = button.dataset.action;
    if (action === "retry") retryReply(bubble);
    else if (action === "edit") startEdit(bubble);
    else if (action === "rewind") rewindTo(bubble);
    else if (action === "fork") forkFrom(bubble, button);
    else if (action === "continue") continueReply();
  });

  estimateButton.addEventListener("click", () => setPanelOpen(panel.hidden));
  panel.querySelector("[data-diagnostics-close]").addEventListener("click", () => setPanelOpen(false));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !panel.hidden) setPanelOpen(false);
  });

  // The header's "⋯" menu is a <details>; close it on an outside click or Escape.
  const menu = document.querySelector("[data-conversation-menu]");
  if (menu) {
    document.addEventListener("click", (event) => {
      if (menu.open && !menu.contains(event.target)) menu.open = false;
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && menu.open) menu.open = false;
    });
  }

  titleButton.addEventListener("click", startRename);
  titleInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      finishRename(true);
    } else if (event.key === "Escape") {
      finishRename(false);
    }
  });
  titleInput.addEventListener("blur", () => finishRename(true));
  // Every handler is attached: a browser test waits for this before it types or clicks
  // (tests/support/chat_page.py; a key pressed before it did nothing, the text left in the box).
  root.dataset.ready = "true";

  const initial = JSON.parse(document.getElementById("initial-diagnostics")?.textContent || "null");
  if (initial) renderDiagnostics(initial);
  watchProviderUsage();
  updateEstimate();
  // A link to a message not in this window goes to a window around it.
  if (!placeWindow()) return;
  followBottom();
  watchWindowTop();

  // Open the socket early so the first send does not wait for the handshake.
  connectSocket().then((ws) => {
    if (!ws) socketUnavailable = true;
  });

  resume();
}

// After a reload: finish an unconfirmed send (idempotent by its client id),
// or follow a reply another tab or an earlier page load is still streaming.
function resume() {
  const unconfirmed = pending.load();
  if (unconfirmed) {
    const clientId = unconfirmed.client_message_id;
    const userBubble = findBubble(clientId);
    const reply = userBubble?.nextElementSibling;
    const settled =
      reply?.dataset.role === "assistant" && reply.dataset.parentId === clientId && reply.dataset.status !== "streaming";
    if (settled) {
      pending.clear(clientId);
    } else {
      const { saved_at: _ignored, ...payload } = unconfirmed;
      const bubble = userBubble ? null : makeUserBubble(payload.content);
      if (bubble) appendBubble(bubble);
      runTurn(new Turn("send", payload, { userBubble: bubble, resumed: true }));
      return;
    }
  }
  // A reply still streaming (sent from another tab, or before a reload): follow
  // it live from the text the page was rendered with.
  const streaming = bubbles().find((b) => b.dataset.status === "streaming");
  if (!streaming && root.dataset.streaming === "true" && !atNewest()) {
    showNotice("A reply is still being written at the end of this conversation: Jump to latest to follow it.");
  }
  if (streaming) {
    const afterSeq = Number.parseInt(streaming.dataset.streamSeq, 10) || 0;
    runTurn(new Turn("watch", { message_id: streaming.dataset.messageId, after_seq: afterSeq }));
  }
}

if (root) init();
