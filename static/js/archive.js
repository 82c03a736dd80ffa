// Archive page, ChatGPT import: uploaded in pieces and run as a background import, followed to its end
// (static/js/archive/import_job.js); the custom instructions the export carried are offered once
// (static/js/archive/instructions_offer.js). Without JavaScript the form posts to the page and imports at once.
import { backgroundImportForm } from "./archive/import_job.js";
import { offerInstructions } from "./archive/instructions_offer.js";

backgroundImportForm(document.querySelector("[data-chatgpt-import]"), (job) =>
  offerInstructions(job.custom_instructions_suggestion),
);
