// Refresh memory (templates/chat/_refresh_memory.html): the API path, reported inline.
(() => {
  if (window.elionRefreshMemoryBound) return;
  window.elionRefreshMemoryBound = true;
  document.addEventListener("submit", async (event) => {
    const form = event.target.closest("[data-refresh-memory]");
    if (!form) return;
    event.preventDefault();
    const button = form.querySelector("[data-refresh-memory-button]");
    const status = form.querySelector("[data-refresh-memory-status]");
    const token = form.querySelector("[name=csrfmiddlewaretoken]");
    const report = (text, ok) => {
      status.textContent = text;
      status.classList.toggle("is-ok", ok);
      status.classList.toggle("is-error", !ok);
    };
    button.disabled = true;
    report("Refreshing…", true);
    try {
      const response = await fetch(form.dataset.refreshMemoryApi, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": token ? token.value : "" },
        body: "{}",
      });
      if (response.ok) {
        report("Memory refreshed: this thread now holds your current memories.", true);
        // "Memories in this chat" lists the snapshot: show the refreshed one.
        if (form.hasAttribute("data-refresh-memory-reload")) window.location.reload();
      } else {
        let detail = "Refresh failed (" + response.status + ").";
        try { detail = "Refresh failed: " + ((await response.json()).detail || detail); } catch (_) { /* not JSON */ }
        report(detail, false);
      }
    } catch (_) {
      report("Refresh failed: the server could not be reached.", false);
    } finally {
      button.disabled = false;
    }
  });
})();
