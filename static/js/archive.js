// Archive page: the ChatGPT import uploads to the API in pieces and runs as a background import, then follows its job
// (static/js/archive/import_job.js). Without JavaScript the form posts to the page and imports at once.
import { csrfToken, followJob, showError, showUpload } from "./archive/import_job.js";

const form = document.querySelector("[data-chatgpt-import]");

// Each file goes up in pieces (`archive/upload_pieces.py`: the server holds a request's whole body in
// memory, so no request carries more than one piece), then the import starts from the uploaded files.
const PIECE_BYTES = Number(form?.dataset.pieceBytes) || 8 * 1024 * 1024;
const PIECE_TRIES = 4;

async function answer(response) {
  let data = {};
  try {
    data = await response.json();
  } catch {
    data = { detail: "The server's answer could not be read." };
  }
  if (!response.ok) throw new Error(data.detail || `The upload failed (HTTP ${response.status}).`);
  return data;
}

function api(url, options = {}) {
  return fetch(url, {
    ...options,
    headers: { "X-CSRFToken": csrfToken(form), Accept: "application/json", ...(options.headers || {}) },
  });
}

async function uploadInPieces(file, onSent) {
  const created = await answer(await api(form.dataset.uploadsApi, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ name: file.name, size: file.size }),
  }));
  const url = `${form.dataset.uploadsApi}${encodeURIComponent(created.upload_id)}/`;
  let received = 0;
  let failures = 0;
  while (received < file.size) {
    const piece = file.slice(received, Math.min(received + PIECE_BYTES, file.size));
    try {
      const state = await answer(await api(`${url}?offset=${received}`, {
        method: "PUT",
        headers: { "Content-Type": "application/octet-stream" },
        body: piece,
      }));
      received = state.received;
      failures = 0;
      onSent(received);
    } catch (error) {
      // A lost answer or a dropped connection: ask where the upload ends, and go on from there.
      failures += 1;
      if (failures >= PIECE_TRIES) throw error;
      const state = await answer(await api(url)).catch(() => null);
      if (state) received = state.received;
    }
  }
  return created.upload_id;
}

form?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const files = [...form.querySelector("#import-file").files];
  const total = files.reduce((sum, file) => sum + file.size, 0);
  showUpload(form, 0, total);
  try {
    if (!files.length) throw new Error("Choose the export zip or its conversations.json first.");
    const uploadIds = [];
    let before = 0;
    for (const file of files) {
      uploadIds.push(await uploadInPieces(file, (sent) => showUpload(form, before + sent, total)));
      before += file.size;
    }
    const body = new FormData(form);
    const job = await answer(await api(`${form.dataset.api}?background=true`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        upload_ids: uploadIds,
        collection: body.get("collection") || "conversations",
        assistant_name: body.get("assistant_name") || "",
      }),
    }));
    followJob(form, job.job_id, offerInstructions);
  } catch (error) {
    form.querySelector("[data-import-job]").hidden = true;
    showError(form, error.message);
  }
});

// A job still running when the page was (re)loaded: follow it again.
if (form?.dataset.jobId) followJob(form, form.dataset.jobId, offerInstructions);

// Custom instructions an export carried: offered once, saved only when the owner says so.
const suggestion = document.querySelector("[data-instructions-suggestion]");

function offerInstructions(text) {
  if (!suggestion || !text) return;
  suggestion.querySelector("[data-suggestion-text]").value = text;
  suggestion.querySelector("[data-suggestion-status]").hidden = true;
  suggestion.querySelector("[data-suggestion-save]").disabled = false;
  suggestion.hidden = false;
}

suggestion?.querySelector("[data-suggestion-dismiss]").addEventListener("click", () => {
  suggestion.hidden = true;
});

suggestion?.querySelector("[data-suggestion-save]").addEventListener("click", async (event) => {
  const status = suggestion.querySelector("[data-suggestion-status]");
  event.target.disabled = true;
  const response = await fetch(suggestion.dataset.api, {
    method: "PATCH",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(form), Accept: "application/json" },
    body: JSON.stringify({ custom_instructions: suggestion.querySelector("[data-suggestion-text]").value }),
  });
  status.hidden = false;
  if (response.ok) {
    status.textContent = "Saved as Settings → Custom instructions.";
    status.dataset.state = "done";
  } else {
    const data = await response.json().catch(() => ({}));
    status.textContent = data.detail || `Saving failed (HTTP ${response.status}).`;
    status.dataset.state = "error";
    event.target.disabled = false;
  }
});
