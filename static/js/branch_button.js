// Branch / Fresh Chat button (templates/chat/_branch_button.html) and "Continue in a new chat" on an
// archive document (templates/archive/document.html, `data-branch-endpoint`); a module runs once however
// often it is included.
if (!window.__elionBranchButton) {
  window.__elionBranchButton = true;
  const storageKey = (sourceId) => `elion.branch.pending.${sourceId}`;
  const newKey = () => {
    if (crypto.randomUUID) return crypto.randomUUID();
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  };
  const pendingKey = (sourceId) => {
    let key = sessionStorage.getItem(storageKey(sourceId));
    if (!key) {
      key = newKey();
      sessionStorage.setItem(storageKey(sourceId), key);
    }
    return key;
  };
  const csrfToken = () => {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    return document.querySelector("input[name=csrfmiddlewaretoken]")?.value ?? "";
  };
  const say = (button, text) => {
    const status = button.parentElement.querySelector("[data-branch-status]");
    if (!status) return;
    status.textContent = text;
    status.hidden = !text;
  };
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-branch-button]");
    if (!button || button.disabled) return;
    const sourceId = button.dataset.branchSource;
    button.disabled = true;
    say(button, button.dataset.branchWorking || "Creating the branch…");
    let response;
    try {
      const endpoint = button.dataset.branchEndpoint || `/api/conversations/${sourceId}/branch/`;
      response = await fetch(endpoint, {
        method: "POST",
        credentials: "same-origin",
        headers: { Accept: "application/json", "Idempotency-Key": pendingKey(sourceId), "X-CSRFToken": csrfToken() },
      });
    } catch (error) {
      button.disabled = false;
      say(button, "The connection failed; click again to retry the same branch.");
      return;
    }
    const body = await response.json().catch(() => ({}));
    if (response.ok && body.id) {
      sessionStorage.removeItem(storageKey(sourceId));
      window.location.assign(`/c/${body.id}/`);
      return;
    }
    const definite = response.status >= 400 && response.status < 500 && ![401, 403, 429].includes(response.status);
    if (definite) sessionStorage.removeItem(storageKey(sourceId));
    button.disabled = false;
    say(button, body.detail || "The branch could not be created; click again to retry.");
  });
}
