// Settings → Voice: preview each voice (GET /api/voices/{voice}/preview/), one at a time.

const form = document.querySelector("[data-voice-settings-form]");
const problem = form?.querySelector("[data-voice-preview-error]");
let playing = null;

async function preview(button) {
  playing?.pause();
  problem.hidden = true;
  const url = `/api/voices/${encodeURIComponent(button.dataset.voicePreview)}/preview/`;
  button.disabled = true;
  try {
    const response = await fetch(url, { credentials: "same-origin" });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.detail || `The preview failed (HTTP ${response.status}).`);
    }
    await response.arrayBuffer();
    playing = new Audio(url); // served again from the kept preview
    await playing.play();
  } catch (error) {
    problem.textContent = error.message;
    problem.hidden = false;
  } finally {
    button.disabled = false;
  }
}

form?.addEventListener("click", (event) => {
  const button = event.target.closest("[data-voice-preview]");
  if (button) preview(button);
});
