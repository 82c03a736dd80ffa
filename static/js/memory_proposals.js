// Memory proposal cards (in a reply, and on Memories → Suggestions): Approve, Edit, Dismiss and
// "Also use it in this chat" post their form and swap in the card the server renders back.
// Delegated, so cards swapped in when a stream ends work too. Without JS the forms post and redirect.
// On Memories → Suggestions, "Waiting for you (N)" counts the cards still pending after each answer.

function countWaiting() {
  const list = document.querySelector("[data-suggestions-pending]");
  const count = document.querySelector("[data-suggestions-waiting-count]");
  if (!list || !count) return;
  const waiting = list.querySelectorAll('[data-proposal-card][data-proposal-status="pending"]').length;
  count.textContent = String(waiting);
  const empty = list.querySelector("[data-suggestions-empty]");
  if (empty) empty.hidden = waiting > 0;
}

document.addEventListener("submit", async (event) => {
  const form = event.target.closest("[data-proposal-form]");
  if (!form) return;
  const card = form.closest("[data-proposal-card]");
  if (!card) return;
  event.preventDefault();
  const buttons = card.querySelectorAll("button");
  buttons.forEach((button) => { button.disabled = true; });
  let note = card.querySelector("[data-proposal-note]");
  try {
    const response = await fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { "X-Elion-Fragment": "card" },
      credentials: "same-origin",
    });
    const text = await response.text();
    if (!response.ok) throw new Error(text || "The suggestion could not be changed.");
    const holder = document.createElement("div");
    holder.innerHTML = text.trim();
    const fresh = holder.firstElementChild;
    if (fresh) {
      card.replaceWith(fresh);
      fresh.querySelector("button, a")?.focus({ preventScroll: true });
      countWaiting();
    }
  } catch (error) {
    buttons.forEach((button) => { button.disabled = false; });
    if (!note) {
      note = document.createElement("p");
      note.className = "proposal-note";
      note.setAttribute("role", "alert");
      note.dataset.proposalNote = "";
      card.append(note);
    }
    note.textContent = error.message;
  }
});
