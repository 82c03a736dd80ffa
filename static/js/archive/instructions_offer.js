// Custom instructions an export carried (ChatGPT's hidden context, a Claude.ai project's prompt template):
// offered once on the Archive page, saved as Settings → Custom instructions only when the owner says so.
import { csrfToken } from "./import_job.js";

const suggestion = document.querySelector("[data-instructions-suggestion]");

export function offerInstructions(text) {
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
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(null), Accept: "application/json" },
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
