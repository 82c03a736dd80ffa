// Elion chat: network and storage helpers with no page state.

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function newClientId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  // randomUUID needs a secure context; a LAN http:// page still has getRandomValues.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  return document.querySelector("input[name=csrfmiddlewaretoken]")?.value ?? "";
}

export async function apiJson(method, path, body) {
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) throw new Error(data?.detail || `The request failed (HTTP ${response.status}).`);
  return data;
}

// Same rule as the server: ceil(characters / 4), counting code points.
export const estimateTokens = (text) => Math.ceil([...(text || "")].length / 4);

export function formatCompact(n) {
  if (n < 1000) return String(n);
  if (n < 10000) return `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`;
  return `${Math.round(n / 1000)}k`;
}

export function parseSseFrame(frame) {
  let name = "message";
  const data = [];
  for (const line of frame.split(/\r?\n/)) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!data.length) return null;
  try {
    return [name, JSON.parse(data.join("\n"))];
  } catch {
    return null;
  }
}

// Feed each `event:`/`data:` frame of a text/event-stream body to `onEvent(name, data)`.
export async function readSse(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      const event = parseSseFrame(frame);
      if (event) onEvent(...event);
    }
  }
}

// An unconfirmed send, kept per tab until its `done` so a reload can resend it
// with the same client_message_id (the server makes that idempotent).
export function pendingSends(conversationId, maxAgeMs) {
  const key = `elion:pending-send:${conversationId}`;
  function save(payload) {
    try {
      sessionStorage.setItem(key, JSON.stringify({ ...payload, saved_at: Date.now() }));
    } catch {
      /* storage full or disabled: the send still works, only reload-resume is lost */
    }
  }

  function load() {
    try {
      const pending = JSON.parse(sessionStorage.getItem(key) || "null");
      if (pending && Date.now() - pending.saved_at < maxAgeMs) return pending;
    } catch {
      /* unreadable: treat as none */
    }
    clear();
    return null;
  }

  function clear(clientId) {
    try {
      const pending = JSON.parse(sessionStorage.getItem(key) || "null");
      if (!clientId || !pending || pending.client_message_id === clientId) sessionStorage.removeItem(key);
    } catch {
      sessionStorage.removeItem(key);
    }
  }
  return { save, load, clear };
}
