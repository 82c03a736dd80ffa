// Elion chat: the "Reported by the provider" block of Request size details.
// The server renders it (templates/chat/_provider_usage.html) with the page;
// when a reply settles — its bubble swapped for the server's rendering, by
// whichever path got it there — the block is fetched again and swapped in.
// Numbers only, beside the app's estimates, never instead of them.

const root = document.querySelector("[data-chat]");
const conversationId = root?.dataset.conversationId;
const list = root?.querySelector("[data-messages]");
let latestRequest = 0;

export async function refreshProviderUsage() {
  const request = (latestRequest += 1);
  const response = await fetch(`/c/${conversationId}/provider-usage/`, {
    credentials: "same-origin",
    cache: "no-store",
  });
  if (!response.ok || request !== latestRequest) return;
  const holder = document.createElement("template");
  holder.innerHTML = (await response.text()).trim();
  const fresh = holder.content.firstElementChild;
  if (request === latestRequest && fresh) root.querySelector("[data-provider-usage]")?.replaceWith(fresh);
}

const settledReply = (node) =>
  node.nodeType === Node.ELEMENT_NODE &&
  node.matches(".message[data-role='assistant']") &&
  node.dataset.status !== "streaming";

export function watchProviderUsage() {
  if (!list) return;
  new MutationObserver((records) => {
    if (records.some((record) => [...record.addedNodes].some(settledReply))) {
      refreshProviderUsage().catch(() => {
        /* the block keeps its figures; the next reply or a reload refreshes it */
      });
    }
  }).observe(list, { childList: true });
}
