// Artifact cards (in a reply, and on the Artifacts pages): Copy puts the card's Markdown on the clipboard.
// Delegated, so cards swapped in when a stream ends work too.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-artifact-copy]");
  if (!button) return;
  const text = button.closest("[data-artifact-card]")?.querySelector("[data-artifact-text]")?.textContent ?? "";
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => { button.textContent = "Copy"; }, 2000);
});
