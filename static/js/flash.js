// Every page: flash messages. Each has a close button; a success message also
// leaves by itself after SUCCESS_DISMISS_MS, with the timer paused while the
// pointer is on it or focus is inside it (so it can be read at any pace).
// Errors and warnings stay until closed. Under prefers-reduced-motion the
// message goes at once, without the fade.

const SUCCESS_DISMISS_MS = 7000;
const FADE_MS = 250;
const reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)");

function dismiss(item) {
  if (!item.isConnected || item.dataset.leaving) return;
  item.dataset.leaving = "true";
  const list = item.closest("[data-flash-list]");
  const done = () => {
    // Focus on a closed message's button moves to the next message's, when there is one.
    const hadFocus = item.contains(document.activeElement);
    const next = item.nextElementSibling || item.previousElementSibling;
    item.remove();
    if (hadFocus) next?.querySelector("[data-flash-close]")?.focus({ preventScroll: true });
    if (list && !list.querySelector("[data-flash]")) list.remove();
  };
  if (reducedMotion.matches) {
    done();
    return;
  }
  item.classList.add("flash-leaving");
  window.setTimeout(done, FADE_MS);
}

function autoDismiss(item) {
  let remaining = SUCCESS_DISMISS_MS;
  let started = 0;
  let timer = 0;
  const run = () => {
    started = Date.now();
    timer = window.setTimeout(() => dismiss(item), remaining);
  };
  const pause = () => {
    if (!timer) return;
    window.clearTimeout(timer);
    timer = 0;
    remaining = Math.max(remaining - (Date.now() - started), 1000);
  };
  const resume = () => {
    if (timer || item.matches(":hover") || item.contains(document.activeElement)) return;
    run();
  };
  item.addEventListener("pointerenter", pause);
  item.addEventListener("pointerleave", resume);
  item.addEventListener("focusin", pause);
  item.addEventListener("focusout", () => window.setTimeout(resume, 0));
  run();
}

export function initFlash(root = document) {
  root.querySelectorAll("[data-flash]").forEach((item) => {
    if (item.dataset.flashReady) return;
    item.dataset.flashReady = "true";
    item.querySelector("[data-flash-close]")?.addEventListener("click", () => dismiss(item));
    if (item.dataset.flash === "success") autoDismiss(item);
  });
}

initFlash();
