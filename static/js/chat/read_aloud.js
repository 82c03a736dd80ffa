// Elion chat: Read aloud (issue 43). The speaker button on a reply plays its speech one segment after
// another (GET …/speech/segments/, then each …/speech/?segment=N), so playback starts once the first
// sentence is made; the next segment is fetched while one plays. Talk reads a reply while it streams. Pressing it again, or another
// reply's button, stops at once. Every failure ends the "speaking" state and says why on the page.
// With "Read replies aloud automatically" on, a reply this page asked for is read when it settles.

const root = document.querySelector("[data-chat]");
const conversationId = root?.dataset.conversationId;
const composer = root?.querySelector("[data-composer]");

let current = null; // { messageId, button, audio, stopped }

function speakerFor(messageId) {
  return document.querySelector(`#message-${CSS.escape(messageId)} [data-read-aloud]`);
}

// The reply's voice mark, as the page renders it once the reply has been read aloud (`read_aloud_at`).
function markReadAloud(messageId) {
  const header = document.querySelector(`#message-${CSS.escape(messageId)} .message-meta`);
  if (!header || header.querySelector("[data-read-aloud-mark]")) return;
  const mark = document.createElement("span");
  mark.className = "badge voice-mark";
  mark.dataset.readAloudMark = "";
  mark.title = "Read aloud (Talk, automatically or from the speaker button)";
  mark.textContent = "Read aloud";
  header.querySelector(".author")?.after(mark);
}

function showState(button, speaking) {
  if (!button) return;
  button.dataset.state = speaking ? "speaking" : "idle";
  button.setAttribute("aria-pressed", String(speaking));
  button.setAttribute("aria-label", speaking ? "Stop reading aloud" : "Read aloud");
}

export function stopReadAloud() {
  const playing = current;
  current = null;
  if (!playing) return;
  playing.stopped = true;
  if (playing.audio) {
    playing.audio.pause();
    playing.audio.removeAttribute("src");
    playing.audio.load();
  }
  showState(playing.button, false);
  root.dataset.speaking = "false";
}

export const isReadingAloud = () => Boolean(current);

async function fetchReady(url) {
  // Makes (or finds) the segment on the server and surfaces its error sentence; the <audio> then reads
  // the same URL, served from the kept blob.
  const response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new Error(body.detail || `Reading aloud failed (HTTP ${response.status}).`);
  }
  await response.arrayBuffer();
}

function playOne(playing, url) {
  return new Promise((resolve, reject) => {
    const audio = new Audio();
    playing.audio = audio;
    audio.preload = "auto";
    audio.addEventListener("ended", resolve, { once: true });
    audio.addEventListener("error", () => reject(new Error("The reply's audio could not be played.")), { once: true });
    audio.src = url;
    audio.play().catch((error) => {
      if (playing.stopped) resolve();
      else reject(new Error(error?.name === "NotAllowedError" ? "The browser blocked playback: press the speaker again." :
        "The reply's audio could not be played."));
    });
  });
}

const LIST_PAUSE_MS = 300; // a streaming reply's stored text is flushed every 0.25 s

async function listSegments(base) {
  const response = await fetch(`${base}segments/`, { credentials: "same-origin", headers: { Accept: "application/json" } });
  const listing = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(listing.detail || `Reading aloud failed (HTTP ${response.status}).`);
  return listing;
}

// Resolves when the reply's text grows or it settles (chat.js's events), or after `ms` at the latest.
function replyGrew(messageId, ms) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      document.removeEventListener("elion:reply-delta", onEvent);
      document.removeEventListener("elion:reply-settled", onEvent);
      resolve();
    };
    const onEvent = (event) => {
      if (event.detail?.messageId === messageId) done();
    };
    const timer = setTimeout(done, ms);
    document.addEventListener("elion:reply-delta", onEvent);
    document.addEventListener("elion:reply-settled", onEvent);
  });
}

// Play a reply; resolves when it has been read, stopped, or failed (`onError` told why). A reply still
// streaming (Talk) is read segment by segment as its text finishes them: the server lists the finished
// segments (`complete` false until it settles), each is made while the rest streams, played in order.
export async function readAloud(messageId, { onError, onStart } = {}) {
  stopReadAloud();
  const button = speakerFor(messageId);
  const playing = { messageId, button, audio: null, stopped: false };
  current = playing;
  showState(button, true);
  root.dataset.speaking = "true";
  try {
    const base = `/api/conversations/${conversationId}/messages/${messageId}/speech/`;
    let listing = await listSegments(base);
    let ready = null; // segment `index` being made (or found), asked for ahead of its turn
    for (let index = 0; ; index += 1) {
      while (index >= listing.segments.length && !listing.complete) {
        await replyGrew(messageId, 1000);
        if (playing.stopped) return;
        await new Promise((resolve) => setTimeout(resolve, LIST_PAUSE_MS));
        if (playing.stopped) return;
        listing = await listSegments(base);
      }
      if (index >= listing.segments.length) break;
      ready = ready || fetchReady(listing.segments[index].url);
      await ready;
      if (playing.stopped) return;
      const next = listing.segments[index + 1];
      ready = next ? fetchReady(next.url) : null;
      ready?.catch(() => {}); // reported when it is awaited
      if (index === 0) {
        markReadAloud(messageId);
        onStart?.();
      }
      await playOne(playing, listing.segments[index].url);
      if (playing.stopped) return;
      if (!listing.complete) listing = await listSegments(base); // what was finished meanwhile
    }
  } catch (error) {
    if (!playing.stopped) onError?.(error.message === "Failed to fetch" ? "Could not reach Elion to read the reply aloud." : error.message);
  } finally {
    if (current === playing) {
      current = null;
      showState(button, false);
      root.dataset.speaking = "false";
    }
  }
}

export function initReadAloud({ onError }) {
  if (!root) return;
  root.dataset.speaking = "false";
  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-read-aloud]");
    if (!button) return;
    const messageId = button.closest(".message")?.dataset.messageId;
    if (!messageId) return;
    if (current?.messageId === messageId) stopReadAloud();
    else readAloud(messageId, { onError });
  });
  document.addEventListener("elion:reply-settled", (event) => {
    const { messageId, kind } = event.detail || {};
    if (composer?.dataset.readAloudAuto !== "true" || kind === "watch" || !messageId) return;
    if (root.dataset.talk === "on") return; // Talk mode reads its own replies
    if (speakerFor(messageId)) readAloud(messageId, { onError });
  });
}
