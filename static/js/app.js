import "./artifact_cards.js";
import "./memory_proposals.js";
import "./banners.js";
import "./sidebar_filter.js";
import "./flash.js";
import "./service_worker_registration.js";

// Every page: the sidebar drawer on narrow screens.
const sidebar = document.getElementById("sidebar");
const scrim = document.querySelector(".scrim");
const openButton = document.querySelector("[data-sidebar-open]");

function setOpen(open) {
  if (!sidebar) return;
  document.body.classList.toggle("sidebar-open", open);
  if (scrim) scrim.hidden = !open;
  if (openButton) openButton.setAttribute("aria-expanded", String(open));
  if (open) sidebar.querySelector("a, button")?.focus({ preventScroll: true });
}

openButton?.addEventListener("click", () => setOpen(true));
document.querySelectorAll("[data-sidebar-close]").forEach((el) => el.addEventListener("click", () => setOpen(false)));
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && document.body.classList.contains("sidebar-open")) setOpen(false);
});
// Keep the current conversation in view in a long list.
document.querySelector(".conversation-link.is-current")?.scrollIntoView({ block: "nearest" });

// Actions that change what automatic continuity may use ask first: any form
// with `data-confirm`. A folder move asks only when it enters or leaves a
// hidden folder (moves between visible folders change nothing).
document.addEventListener(
  "submit",
  (event) => {
    const form = event.target.closest("form[data-confirm]");
    if (!form) return;
    if (form.hasAttribute("data-move-form")) {
      const option = form.querySelector("select option:checked");
      const wasHidden = form.dataset.currentHidden === "true";
      if ((option?.dataset.hidden === "true") === wasHidden) return;
    }
    if (!window.confirm(form.dataset.confirm)) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  },
  true,
);
