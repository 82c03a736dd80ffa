// Archive page: the ChatGPT import posts to the API with a progress bar, then shows the summary.
// Without JavaScript the form posts to the page and the summary arrives as a flash message.
const form = document.querySelector("[data-chatgpt-import]");

function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  return form?.querySelector("input[name=csrfmiddlewaretoken]")?.value ?? "";
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
    let data = {};
    try {
      data = JSON.parse(request.responseText || "{}");
    } catch {
      data = { detail: "The server's answer could not be read." };
    }
    summary.hidden = false;
    problems.replaceChildren();
    problems.hidden = true;
    if (request.status >= 200 && request.status < 300) {
      summary.textContent =
        `Imported ${data.conversations} conversation(s) with ${data.messages} message(s)` +
        (data.alternate_messages ? ` and ${data.alternate_messages} on other branches` : "") +
        `; ${data.duplicates} already in the archive, ${data.skipped} skipped.`;
      summary.dataset.state = "done";
      for (const problem of data.problems || []) {
        const item = document.createElement("li");
        item.textContent = `#${problem.index} ${problem.title || "untitled"}: ${problem.reason}`;
        problems.append(item);
      }
      problems.hidden = !problems.children.length;
      offerInstructions(data.custom_instructions_suggestion);
    } else {
      progress.hidden = true;
      summary.textContent = data.detail || `The import failed (HTTP ${request.status}).`;
      summary.dataset.state = "error";
    }
  });
  request.send(body);
});

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
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
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
