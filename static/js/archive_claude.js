// Archive page, Claude.ai import: the form posts to the API with a progress bar, then shows the summary,
// the problems, and the memories the export carried (offered to the memory import preview; the owner
// confirms there). Without JavaScript the form posts to the page, and the memories are shown on the next one.
const form = document.querySelector("[data-claude-import]");
const offer = document.querySelector("[data-memory-suggestions]");

function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  return form?.querySelector("input[name=csrfmiddlewaretoken]")?.value ?? "";
}

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

function showAnswer(request, summary, problems, progress) {
  let data = {};
  try {
    data = JSON.parse(request.responseText || "{}");
  } catch {
    data = { detail: "The server's answer could not be read." };
  }
  summary.hidden = false;
  problems.replaceChildren();
  problems.hidden = true;
  if (request.status < 200 || request.status >= 300) {
    progress.hidden = true;
    summary.textContent = data.detail || `The import failed (HTTP ${request.status}).`;
    summary.dataset.state = "error";
    return;
  }
  summary.textContent =
    `Imported ${data.conversations} conversation(s) with ${data.messages} message(s); ` +
    `${data.duplicates} already in the archive, ${data.skipped} skipped.`;
  summary.dataset.state = "done";
  for (const problem of data.problems || []) {
    const item = document.createElement("li");
    const where = problem.index === null ? "" : `#${problem.index} ${problem.title || "untitled"}: `;
    item.textContent = where + problem.reason;
    problems.append(item);
  }
  problems.hidden = !problems.children.length;
  offerMemories(data.memory_suggestions);
}

form?.addEventListener("submit", (event) => {
  event.preventDefault();
  const progress = form.querySelector("[data-import-progress]");
  const summary = form.querySelector("[data-import-summary]");
  const problems = form.querySelector("[data-import-problems]");
  const button = form.querySelector("button[type=submit]");
  const body = new FormData(form);
  body.delete("action");
  const request = new XMLHttpRequest();
  request.open("POST", form.dataset.api);
  request.setRequestHeader("X-CSRFToken", csrfToken());
  request.setRequestHeader("Accept", "application/json");
  progress.hidden = false;
  progress.value = 0;
  summary.hidden = true;
  button.disabled = true;
  request.upload.addEventListener("progress", (e) => {
    if (e.lengthComputable) progress.value = Math.round((e.loaded / e.total) * 90);
  });
  // Uploaded: the server is now reading the export.
  request.upload.addEventListener("load", () => progress.removeAttribute("value"));
  request.addEventListener("loadend", () => {
    button.disabled = false;
    progress.value = 100;
    showAnswer(request, summary, problems, progress);
  });
  request.send(body);
});

offer?.querySelector("[data-memory-suggestion-dismiss]").addEventListener("click", () => {
  offer.hidden = true;
});
