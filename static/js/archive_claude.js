// Archive page, Claude.ai import: the same background import as the ChatGPT form (static/js/archive/import_job.js:
// pieces, the job's progress, Cancel and Resume, found again after a reload), then the memories the export
// carried (offered to the memory import preview; the owner confirms there) and a project's prompt template
// (offered for Settings → Custom instructions). Without JavaScript the form posts to the page and imports at
// once, and the memories are shown on the next one.
import { backgroundImportForm } from "./archive/import_job.js";
import { offerInstructions } from "./archive/instructions_offer.js";

const offer = document.querySelector("[data-memory-suggestions]");

function offerMemories(suggestions) {
  if (!offer || !suggestions?.length) return;
  const list = offer.querySelector("[data-memory-suggestion-list]");
  list.replaceChildren(
    ...suggestions.map((suggestion) => {
      const item = document.createElement("li");
      item.textContent = suggestion.text;
      return item;
    }),
  );
  offer.querySelector("[data-memory-suggestion-text]").value = JSON.stringify(suggestions);
  offer.hidden = false;
}

backgroundImportForm(document.querySelector("[data-claude-import]"), (job) => {
  offerMemories(job.memory_suggestions);
  offerInstructions(job.custom_instructions_suggestion);
});

offer?.querySelector("[data-memory-suggestion-dismiss]").addEventListener("click", () => {
  offer.hidden = true;
});
