// Archive page: the ChatGPT import uploads to the API as a background import, then follows its job
// (static/js/archive/import_job.js). Without JavaScript the form posts to the page and imports at once.
import { csrfToken, followJob, showError, showUpload } from "./archive/import_job.js";

const form = document.querySelector("[data-chatgpt-import]");

form?.addEventListener("submit", (event) => {
  event.preventDefault();
  const body = new FormData(form);
  body.delete("action");
  const request = new XMLHttpRequest();
  request.open("POST", `${form.dataset.api}?background=true`);
  request.setRequestHeader("X-CSRFToken", csrfToken(form));
  request.setRequestHeader("Accept", "application/json");
  showUpload(form, 0, 1);
  request.upload.addEventListener("progress", (e) => {
    if (e.lengthComputable) showUpload(form, e.loaded, e.total);
  });
  request.addEventListener("loadend", () => {
    let data = {};
    try {
      data = JSON.parse(request.responseText || "{}");
    } catch {
      data = { detail: "The server's answer could not be read." };
    }
    if (request.status === 202 && data.job_id) {
      followJob(form, data.job_id, offerInstructions);
    } else {
      form.querySelector("[data-import-job]").hidden = true;
      showError(form, data.detail || `The import failed (HTTP ${request.status}).`);
    }
  });
  request.send(body);
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
