// Elion chat: the composer's attachments. Each chosen file is uploaded at once
// (POST /api/attachments/, scoped to this conversation) and shown as a chip;
// the next send carries the uploaded ids in the order shown. Names are only
// ever set as text, never as HTML.

import { csrfToken } from "./net.js";

const root = document.querySelector("[data-chat]");
const conversationId = root?.dataset.conversationId;
const fileInput = root?.querySelector("[data-attach-input]");
const chips = root?.querySelector("[data-attachment-chips]");

let ready = []; // [{id, name}] uploaded, in the order chosen
let inFlight = 0;

function render() {
  chips.replaceChildren();
  for (const item of ready) {
    const chip = document.createElement("li");
    chip.className = "attachment-chip";
    chip.dataset.attachmentId = item.id;
    const name = document.createElement("span");
    name.className = "attachment-chip-name";
    name.textContent = item.name;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "attachment-chip-remove";
    remove.setAttribute("aria-label", `Remove ${item.name}`);
    remove.textContent = "×";
    remove.addEventListener("click", () => {
      ready = ready.filter((other) => other.id !== item.id);
      render();
    });
    chip.append(name, remove);
    chips.append(chip);
  }
  if (inFlight) {
    const busy = document.createElement("li");
    busy.className = "attachment-chip is-uploading";
    busy.textContent = `Uploading ${inFlight} file${inFlight === 1 ? "" : "s"}…`;
    chips.append(busy);
  }
  chips.hidden = !ready.length && !inFlight;
}

async function uploadOne(file, onError) {
  const form = new FormData();
  form.append("file", file);
  form.append("conversation_id", conversationId);
  try {
    const response = await fetch("/api/attachments/", {
      method: "POST",
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: form,
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.detail || `The upload failed (HTTP ${response.status}).`);
    return { id: body.id, name: body.name };
  } catch (error) {
    onError(`${file.name}: ${error.message}`);
    return null;
  }
}

export function initAttachments({ onError }) {
  if (!fileInput) return;
  fileInput.addEventListener("change", async () => {
    const files = [...fileInput.files];
    fileInput.value = "";
    inFlight += files.length;
    render();
    // Sequential, so the chips (and the manifest) keep the order the files were chosen in.
    for (const file of files) {
      const uploaded = await uploadOne(file, onError);
      inFlight -= 1;
      if (uploaded) ready.push(uploaded);
      render();
    }
  });
}

export const uploading = () => inFlight > 0;

// The uploaded attachments for the next send; the composer's chips are cleared.
export function takeAttachments() {
  const taken = ready;
  ready = [];
  render();
  return taken;
}

// A send that never reached the server gives its attachments back.
export function restoreAttachments(items) {
  if (!items?.length) return;
  ready = [...items, ...ready.filter((item) => !items.some((other) => other.id === item.id))];
  render();
}

// An upload made elsewhere (a kept voice recording) joins the next send's attachments.
export function addAttachment(item) {
  if (!ready.some((other) => other.id === item.id)) ready.push(item);
  render();
}

export function setAttachDisabled(value) {
  if (fileInput) fileInput.disabled = value;
}

// The names shown on a user bubble until the server's rendering replaces it.
export function appendAttachmentNames(bubble, items) {
  if (!items?.length) return;
  const list = document.createElement("ul");
  list.className = "message-attachments";
  for (const item of items) {
    const entry = document.createElement("li");
    entry.className = "attachment";
    entry.textContent = item.name;
    list.append(entry);
  }
  bubble.append(list);
}
