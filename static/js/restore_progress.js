// Settings → Restore: follows a restore job (`GET /api/restores/{id}/`) until it is done or failed, and says where
// it is in the polite live region, so a screen reader hears each step once. Without JavaScript, Refresh does it.
const POLL_MS = 1500;

function paragraph(text, attributes = {}) {
  const p = document.createElement("p");
  p.textContent = text;
  for (const [name, value] of Object.entries(attributes)) p.setAttribute(name, value);
  return p;
}

function render(region, run) {
  const parts = [];
  if (run.status === "queued") {
    parts.push(paragraph("Waiting for the background queue to start the restore. This page follows it."));
  } else if (run.status === "running") {
    const step = run.step || "starting";
    const index = run.steps.indexOf(run.step) + 1;
    parts.push(paragraph(`Restoring: ${step}${index ? ` (step ${index} of ${run.steps.length})` : ""}. This page follows it.`));
  } else if (run.status === "done") {
    const done = paragraph("", { "data-restore-outcome": "done" });
    const strong = document.createElement("strong");
    strong.textContent = "Restored.";
    done.append(strong, ` This instance now holds ${run.restored_words || "what the backup held"}. You are still signed in.`
      + (run.detail ? ` ${run.detail}` : ""));
    parts.push(done);
    if (run.safety_backup) {
      const safety = paragraph(`The state before the restore was backed up and verified: ${run.safety_backup}`);
      safety.className = "help";
      parts.push(safety);
    }
  } else {
    const failed = paragraph(run.detail || "The restore failed.", { "data-restore-outcome": "failed" });
    failed.className = "form-error";
    parts.push(failed);
  }
  region.replaceChildren(...parts);
}

async function follow(section) {
  const region = section.querySelector("[data-restore-progress]");
  let last = "";
  for (;;) {
    if (!["queued", "running"].includes(section.dataset.restoreStatus)) return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    let run;
    try {
      const response = await fetch(section.dataset.restoreUrl, { headers: { Accept: "application/json" } });
      if (!response.ok) continue;
      run = await response.json();
    } catch {
      continue; // the server may be busy with the restore itself: ask again
    }
    const seen = `${run.status}:${run.step}`;
    section.dataset.restoreStatus = run.status;
    if (seen !== last) render(region, run);
    last = seen;
  }
}

const section = document.querySelector("[data-restore-run]");
if (section) follow(section);
