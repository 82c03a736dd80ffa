// Elion chat: dictation (issue 43). The microphone button records with MediaRecorder (Opus in WebM or
// Ogg, whatever the browser offers), sends the recording to POST /api/transcriptions/ and writes the
// words into the composer where the caret was, as they stream in. Nothing is sent by itself: the owner
// reads, edits and sends. On any failure the composer is put back exactly as it was and the reason is
// shown. A kept recording ("Keep voice recordings") joins the composer's attachments.

import { csrfToken, readSse } from "./net.js";
import { addAttachment } from "./attachments.js";

const root = document.querySelector("[data-chat]");
const conversationId = root?.dataset.conversationId;
const button = root?.querySelector("[data-dictate-button]");
const status = root?.querySelector("[data-dictate-status]");

let state = "idle"; // idle | recording | transcribing
let recorder = null;
let stream = null;
let chunks = [];
let startedAt = 0;
let limitTimer = null;
let dictated = false; // words dictated into the composer since the last send

function setState(next, text = "") {
  state = next;
  if (!button) return;
  button.dataset.state = next;
  button.setAttribute("aria-pressed", String(next === "recording"));
  button.setAttribute(
    "aria-label",
    next === "recording" ? "Stop recording and transcribe" : next === "transcribing" ? "Transcribing…" : "Dictate",
  );
  button.disabled = next === "transcribing";
  status.textContent = text;
  status.hidden = !text;
}

function preferredType() {
  for (const type of ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm", "audio/ogg"]) {
    if (globalThis.MediaRecorder?.isTypeSupported?.(type)) return type;
  }
  return "";
}

function releaseMicrophone() {
  for (const track of stream?.getTracks() || []) track.stop();
  stream = null;
  clearTimeout(limitTimer);
}

// The composer's text with the words placed where the caret was; put back as it was on failure.
function composerSlot(input) {
  const original = input.value;
  const start = input.selectionStart ?? original.length;
  const end = input.selectionEnd ?? original.length;
  const before = original.slice(0, start);
  const after = original.slice(end);
  const lead = before && !/\s$/.test(before) ? " " : "";
  const tail = after && !/^\s/.test(after) ? " " : "";
  return {
    show(words) {
      const text = words.trim();
      input.value = text ? before + lead + text + tail + after : original;
      const caret = (before + lead + text).length;
      input.setSelectionRange(caret, caret);
    },
    restore() {
      input.value = original;
      input.setSelectionRange(start, end);
    },
  };
}

async function transcribe(blob, seconds, { input, onError, autosize }) {
  setState("transcribing", "Transcribing…");
  const slot = composerSlot(input);
  const wasReadOnly = input.readOnly;
  input.readOnly = true; // nothing typed meanwhile can be overwritten
  const form = new FormData();
  const extension = blob.type.includes("ogg") ? "ogg" : "webm";
  form.append("file", blob, `recording.${extension}`);
  form.append("duration_seconds", seconds.toFixed(2));
  if (conversationId) form.append("conversation_id", conversationId);
  let words = "";
  let failure = "";
  try {
    const response = await fetch("/api/transcriptions/", {
      method: "POST",
      credentials: "same-origin",
      headers: { Accept: "text/event-stream", "X-CSRFToken": csrfToken() },
      body: form,
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.detail || `Transcription failed (HTTP ${response.status}).`);
    }
    let done = false;
    await readSse(response, (name, data) => {
      if (name === "delta") {
        words += data.text;
        slot.show(words);
        autosize();
      } else if (name === "done") {
        done = true;
        words = data.text;
        slot.show(words);
        dictated = Boolean(words.trim());
        if (data.attachment) addAttachment({ id: data.attachment.id, name: data.attachment.name });
        if (data.demo) onError("Offline demo: no model provider is set up, so a fixed sentence stands in for your words.");
      } else if (name === "error") {
        failure = data.detail || "Transcription failed.";
      }
    });
    if (!done && !failure) failure = "The connection dropped before the transcription finished. Try again.";
  } catch (error) {
    failure = error.message === "Failed to fetch" ? "Could not reach Elion. Check the connection and try again." : error.message;
  } finally {
    input.readOnly = wasReadOnly;
  }
  if (failure) {
    slot.restore();
    onError(failure);
  } else if (!words.trim()) {
    slot.restore();
    onError("No words were heard in the recording.");
  }
  autosize();
  input.focus({ preventScroll: true });
  setState("idle");
}

async function startRecording(options) {
  const { onError } = options;
  if (!navigator.mediaDevices?.getUserMedia || !globalThis.MediaRecorder) {
    onError("This browser cannot record audio here (it needs a secure connection and a microphone).");
    return;
  }
  try {
    stream = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
  } catch (error) {
    const denied = error?.name === "NotAllowedError" || error?.name === "SecurityError";
    onError(denied ? "Elion may not use the microphone: allow it in the browser's site settings." :
      "No microphone could be opened.");
    setState("idle");
    return;
  }
  const type = preferredType();
  recorder = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
  chunks = [];
  recorder.addEventListener("dataavailable", (event) => {
    if (event.data?.size) chunks.push(event.data);
  });
  recorder.addEventListener("stop", () => {
    const seconds = (performance.now() - startedAt) / 1000;
    const blob = new Blob(chunks, { type: recorder.mimeType || type || "audio/webm" });
    recorder = null;
    releaseMicrophone();
    if (!blob.size) {
      setState("idle");
      onError("Nothing was recorded. Try again.");
      return;
    }
    transcribe(blob, seconds, options);
  });
  startedAt = performance.now();
  recorder.start(250);
  setState("recording", "Listening… press the microphone again to stop.");
  const maxSeconds = Number(button.dataset.maxSeconds) || 600;
  limitTimer = setTimeout(() => recorder?.state === "recording" && recorder.stop(), maxSeconds * 1000);
}

export function initDictation(options) {
  if (!button) return;
  button.hidden = false;
  setState("idle");
  button.addEventListener("click", () => {
    if (state === "recording") recorder?.stop();
    else if (state === "idle") startRecording(options);
  });
}

// Whether the message about to be sent holds dictated words (sent as "voice": true); cleared.
export function takeDictated() {
  const was = dictated;
  dictated = false;
  return was;
}
