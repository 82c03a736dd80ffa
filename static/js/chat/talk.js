// Elion chat: Talk, hands-free (issue 43). The microphone is opened once (echoCancellation on, no
// automatic gain, so Elion's own voice leaking back stays as quiet as it arrives). A level detector
// in the browser finds the start and end of speech; when the owner stops speaking for the chosen
// pause, the recording is transcribed and sent through the ordinary send with "voice": true, and
// the reply is read aloud sentence by sentence as it streams. While Elion speaks, only speech
// clearly louder than the listening threshold (ECHO_FACTOR times it) counts, so playback alone never becomes a turn; speech
// that loud stops playback at once (barge-in) and a reply still streaming is stopped through Stop.
// Every failure is shown and ends "speaking"; Talk can be left at any moment.

import { csrfToken } from "./net.js";
import { isReadingAloud, readAloud, stopReadAloud } from "./read_aloud.js";

const root = document.querySelector("[data-chat]");
const conversationId = root?.dataset.conversationId;
const button = root?.querySelector("[data-talk-button]");
const bar = root?.querySelector("[data-talk-bar]");
const statusLine = root?.querySelector("[data-talk-status]");
const pauseSelect = root?.querySelector("[data-talk-pause]");

const FRAME_MS = 50;
const START_MS = 150; // this long above the threshold is speech, not a click
const LEVEL = Number(button?.dataset.talkLevel) || 0.02; // RMS of samples in -1..1
const ECHO_FACTOR = 4; // while Elion speaks, speech must be this much louder
const ENVELOPE_DECAY = 0.8; // per frame: a peak fades to a tenth in half a second
const IDLE_RECORDING_MS = 20_000; // a recorder that heard nothing this long starts afresh
const PAUSE_KEY = "elion:talk-pause-ms";

let options = null;
let state = "off"; // off | listening | hearing | thinking | speaking
let stream = null;
let audioContext = null;
let analyser = null;
let timer = null;
let recorder = null;
let chunks = [];
let recorderStarted = 0;
let aboveSince = 0;
let belowSince = 0;
let heardAt = 0;
let settled = null; // the reply-settled event of the turn Talk sent
let ticking = false;
let envelope = 0;

function pauseMs() {
  return Number(pauseSelect?.value) || 1200;
}

function show(next, text) {
  state = next;
  root.dataset.talk = next === "off" ? "off" : "on";
  root.dataset.talkState = next;
  button?.setAttribute("aria-pressed", String(next !== "off"));
  if (bar) bar.hidden = next === "off";
  if (statusLine) statusLine.textContent = text || "";
}

function level() {
  const samples = new Float32Array(analyser.fftSize);
  analyser.getFloatTimeDomainData(samples);
  let sum = 0;
  for (const v of samples) sum += v * v;
  return Math.sqrt(sum / samples.length);
}

function newRecorder() {
  chunks = [];
  const type = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm"].find((t) =>
    MediaRecorder.isTypeSupported?.(t));
  recorder = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
  recorder.addEventListener("dataavailable", (event) => {
    if (event.data?.size) chunks.push(event.data);
  });
  recorder.start(250);
  recorderStarted = performance.now();
}

function stopRecorder() {
  return new Promise((resolve) => {
    if (!recorder || recorder.state === "inactive") {
      resolve(null);
      return;
    }
    const current = recorder;
    current.addEventListener("stop", () => resolve(new Blob(chunks, { type: current.mimeType || "audio/webm" })), {
      once: true,
    });
    current.stop();
    recorder = null;
  });
}

function listen() {
  if (state === "off") return;
  aboveSince = 0;
  belowSince = 0;
  newRecorder();
  show("listening", "Listening… speak when you are ready.");
}

async function tick() {
  if (ticking) return;
  ticking = true;
  try {
    await detect();
  } finally {
    ticking = false;
  }
}

async function detect() {
  if (state === "off" || state === "thinking") return;
  const now = performance.now();
  // Any reply being read aloud (Talk's own, or one the owner pressed play on) raises the threshold.
  const speaking = isReadingAloud();
  // A peak-holding envelope: speech dips between syllables, and a dip is not the end of speaking.
  envelope = Math.max(level(), envelope * ENVELOPE_DECAY);
  const loud = envelope > (speaking ? LEVEL * ECHO_FACTOR : LEVEL);
  root.dataset.talkLevel = envelope.toFixed(3);
  if (state === "listening" || state === "speaking") {
    aboveSince = loud ? aboveSince || now : 0;
    if (aboveSince && now - aboveSince >= START_MS) {
      if (speaking) {
        stopReadAloud(); // barge-in: at once
        options.stopReply();
        await stopRecorder();
        newRecorder();
      }
      heardAt = now;
      belowSince = 0;
      show("hearing", "Hearing you…");
    } else if (state === "listening" && now - recorderStarted > IDLE_RECORDING_MS) {
      await stopRecorder();
      newRecorder();
    }
    return;
  }
  if (state === "hearing") {
    belowSince = loud ? 0 : belowSince || now;
    const maxMs = (Number(root.querySelector("[data-dictate-button]")?.dataset.maxSeconds) || 600) * 1000;
    if ((belowSince && now - belowSince >= pauseMs()) || now - heardAt > maxMs) {
      show("thinking", "Transcribing…");
      const blob = await stopRecorder();
      turn(blob, (now - recorderStarted) / 1000);
    }
  }
}

async function transcribe(blob, seconds) {
  const form = new FormData();
  form.append("file", blob, blob.type.includes("ogg") ? "talk.ogg" : "talk.webm");
  form.append("duration_seconds", seconds.toFixed(2));
  form.append("conversation_id", conversationId);
  const response = await fetch("/api/transcriptions/", {
    method: "POST",
    credentials: "same-origin",
    headers: { Accept: "application/json", "X-CSRFToken": csrfToken() },
    body: form,
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.detail || `Transcription failed (HTTP ${response.status}).`);
  return body.text || "";
}

async function turn(blob, seconds) {
  try {
    const text = blob?.size ? (await transcribe(blob, seconds)).trim() : "";
    if (state === "off") return;
    if (!text) {
      listen();
      return;
    }
    if (options.isBusy()) throw new Error("A reply is still being written; Talk waits for it to finish.");
    show("thinking", "Sending…");
    settled = null;
    // The reply is read sentence by sentence as it streams: reading starts with its first text.
    let reading = null;
    const speak = (messageId) => {
      show("speaking", "Speaking… talk to interrupt.");
      newRecorder(); // barge-in is heard from the first word
      reading = readAloud(messageId, { onError: (message) => options.onError(message) });
    };
    const onDelta = (event) => {
      const { messageId, kind } = event.detail || {};
      if (!reading && state === "thinking" && messageId && kind === "send") speak(messageId);
    };
    document.addEventListener("elion:reply-delta", onDelta);
    try {
      await options.send(text);
    } finally {
      document.removeEventListener("elion:reply-delta", onDelta);
    }
    if (state === "off") return;
    const reply = settled;
    settled = null;
    if (!reading) {
      if (!reply?.messageId) {
        listen(); // the send failed: its notice says why, and the words are back in the composer
        return;
      }
      if (state !== "thinking") return; // the owner spoke meanwhile
      speak(reply.messageId); // a reply that came whole
    }
    await reading;
    if (state === "speaking") {
      await stopRecorder();
      listen();
    }
  } catch (error) {
    options.onError(error.message === "Failed to fetch" ? "Could not reach Elion. Talk is still listening." : error.message);
    if (state !== "off") listen();
  }
}

async function start() {
  if (!navigator.mediaDevices?.getUserMedia || !globalThis.MediaRecorder || !globalThis.AudioContext) {
    options.onError("This browser cannot listen here (it needs a secure connection and a microphone).");
    return;
  }
  show("thinking", "Opening the microphone…");
  try {
    stream = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: false },
    });
  } catch (error) {
    stop();
    const denied = error?.name === "NotAllowedError" || error?.name === "SecurityError";
    options.onError(denied ? "Talk needs the microphone: allow it in the browser's site settings." :
      "No microphone could be opened, so Talk is off.");
    return;
  }
  stream.getAudioTracks()[0]?.addEventListener("ended", () => {
    if (state === "off") return;
    stop();
    options.onError("The microphone stopped (unplugged, or taken by another app), so Talk is off.");
  });
  audioContext = new AudioContext();
  await audioContext.resume().catch(() => {});
  analyser = audioContext.createAnalyser();
  analyser.fftSize = 2048;
  audioContext.createMediaStreamSource(stream).connect(analyser);
  timer = setInterval(tick, FRAME_MS);
  listen();
}

export function stop() {
  clearInterval(timer);
  timer = null;
  show("off", "");
  stopReadAloud();
  if (recorder && recorder.state !== "inactive") recorder.stop();
  recorder = null;
  for (const track of stream?.getTracks() || []) track.stop();
  stream = null;
  audioContext?.close().catch(() => {});
  audioContext = null;
}

export function initTalk(given) {
  if (!button) return;
  options = given;
  button.hidden = false;
  show("off", "");
  try {
    const saved = localStorage.getItem(PAUSE_KEY);
    if (saved && pauseSelect?.querySelector(`option[value="${CSS.escape(saved)}"]`)) pauseSelect.value = saved;
  } catch {
    /* storage disabled: the default pause */
  }
  pauseSelect?.addEventListener("change", () => {
    try {
      localStorage.setItem(PAUSE_KEY, pauseSelect.value);
    } catch {
      /* not remembered */
    }
  });
  button.addEventListener("click", () => (state === "off" ? start() : stop()));
  root.querySelector("[data-talk-end]")?.addEventListener("click", stop);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && state !== "off") stop();
  });
  document.addEventListener("elion:reply-settled", (event) => {
    if (state !== "off") settled = event.detail;
  });
}
