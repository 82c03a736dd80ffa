// Every banner (`data-banner`): on a phone it is one line until "More" opens it (static/css/shell.css);
// on a wide screen the toggle is not shown and the banner is whole.
document.addEventListener("click", (event) => {
  const toggle = event.target.closest("[data-banner-more]");
  if (!toggle) return;
  const banner = toggle.closest("[data-banner]");
  const open = !banner.classList.contains("is-expanded");
  banner.classList.toggle("is-expanded", open);
  toggle.setAttribute("aria-expanded", String(open));
  toggle.textContent = open ? "Less" : "More";
});
