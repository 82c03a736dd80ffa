// Settings → Check-ins: "Run now" posts to the API (POST /api/check-ins/{id}/run/) with the
// Idempotency-Key the page rendered into its form, so a double click or a retry after a lost answer runs
// the check-in once. On success a link opens the reply; the next click gets a fresh key (a new run).
// Without JS the form posts to the page's own route with the same key.

function csrfToken(form) {
  return form.querySelector("input[name=csrfmiddlewaretoken]")?.value || "";
}

// A fresh key; crypto.randomUUID needs a secure context, getRandomValues does not (a LAN address over http).
function freshKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function statusLine(form) {
  return form.closest("[data-check-in]")?.querySelector("[data-check-in-run-status-line]");
}

document.addEventListener("submit", async (event) => {
  const form = event.target.closest("form[data-check-in-run]");
  if (!form) return;
  event.preventDefault();
  const button = form.querySelector("button");
  const keyInput = form.querySelector("[data-check-in-run-key]");
  const line = statusLine(form);
  button.disabled = true;
  if (line) line.textContent = "Running… (the reply is being written)";
  try {
    const response = await fetch(`/api/check-ins/${form.dataset.checkInId}/run/`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Idempotency-Key": keyInput.value, "X-CSRFToken": csrfToken(form), Accept: "application/json" },
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.detail || "The check-in could not run.");
    keyInput.value = freshKey();
    if (line) {
      line.textContent = "Elion wrote: ";
      const link = document.createElement("a");
      link.href = `/c/${body.conversation_id}/?around=${body.message_id}#message-${body.message_id}`;
      link.textContent = "open the reply";
      link.dataset.checkInRunLink = "";
      line.append(link);
    }
  } catch (error) {
    if (line) line.textContent = error.message;
  } finally {
    button.disabled = false;
  }
});
