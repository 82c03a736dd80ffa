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
    if (request.status >= 200 && request.status < 300) {
      summary.textContent =
        `Imported ${data.conversations} conversation(s) with ${data.messages} message(s); ` +
        `${data.duplicates} already in the archive, ${data.skipped} skipped (nothing said).`;
      summary.dataset.state = "done";
    } else {
      progress.hidden = true;
      summary.textContent = data.detail || `The import failed (HTTP ${request.status}).`;
      summary.dataset.state = "error";
    }
  });
  request.send(body);
});
