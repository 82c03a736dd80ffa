// The sidebar's filter box: narrows the listed conversations to the titles that contain what is typed
// (case- and accent-insensitive). Keyboard: typing filters, Enter opens the first match, ArrowDown
// moves into the list, Escape clears the box.
const input = document.querySelector("[data-sidebar-filter]");
const nav = document.querySelector("[data-conversation-nav]");
const status = document.querySelector("[data-sidebar-filter-status]");
const empty = document.querySelector("[data-sidebar-filter-empty]");

const folded = (text) => text.normalize("NFD").replace(/\p{M}/gu, "").toLocaleLowerCase();

function visibleLinks() {
  return [...nav.querySelectorAll("[data-conversation-item]:not([hidden]) [data-conversation-link]")];
}

function applyFilter() {
  const query = folded(input.value.trim());
  let shown = 0;
  nav.querySelectorAll("[data-conversation-group]").forEach((group) => {
    let groupShown = 0;
    group.querySelectorAll("[data-conversation-item]").forEach((item) => {
      const title = item.querySelector(".conversation-title")?.textContent ?? "";
      const match = !query || folded(title).includes(query);
      item.hidden = !match;
      if (match) groupShown += 1;
    });
    // An empty folder stays listed when nothing is typed (it can be used and hidden).
    group.hidden = Boolean(query) && groupShown === 0;
    shown += groupShown;
  });
  if (empty) empty.hidden = !query || shown > 0;
  if (status) status.textContent = query ? `${shown} ${shown === 1 ? "chat matches" : "chats match"}` : "";
}

if (input && nav) {
  input.addEventListener("input", applyFilter);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && input.value) {
      input.value = "";
      applyFilter();
      event.stopPropagation();
    } else if (event.key === "Enter") {
      const first = visibleLinks()[0];
      if (first && input.value.trim()) {
        event.preventDefault();
        first.click();
      }
    } else if (event.key === "ArrowDown") {
      const first = visibleLinks()[0];
      if (first) {
        event.preventDefault();
        first.focus();
      }
    }
  });
  nav.addEventListener("keydown", (event) => {
    if (!["ArrowDown", "ArrowUp"].includes(event.key)) return;
    const links = visibleLinks();
    const at = links.indexOf(document.activeElement);
    if (at < 0) return;
    event.preventDefault();
    if (event.key === "ArrowUp" && at === 0) input.focus();
    else links[Math.min(links.length - 1, Math.max(0, at + (event.key === "ArrowDown" ? 1 : -1)))].focus();
  });
  // A value the browser restored (back / forward) filters as typed.
  if (input.value) applyFilter();
}
