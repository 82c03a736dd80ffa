// Settings → Notifications (docs/push.md): ask for the permission, subscribe this browser with the server's
// VAPID key (GET /api/push/key/) and hand the subscription to the server (POST /api/push/subscriptions/).
import { apiJson } from "./chat/net.js";
import { registration } from "./service_worker_registration.js";

const SAVED_ID = "elion-push-subscription-id";
const section = document.querySelector("[data-push-settings]");
const enable = section?.querySelector("[data-push-enable]");
const disable = section?.querySelector("[data-push-disable]");
const status = section?.querySelector("[data-push-status]");
const problem = section?.querySelector("[data-push-error]");

function say(text) {
  if (status) status.textContent = text;
}

function fail(text) {
  if (!problem) return;
  problem.textContent = text;
  problem.hidden = false;
}

function keyBytes(base64url) {
  const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(base64url.length / 4) * 4, "=");
  return Uint8Array.from(atob(base64), (ch) => ch.charCodeAt(0));
}

async function worker() {
  const registered = await registration;
  if (!registered) throw new Error("This browser did not register the app's service worker.");
  return navigator.serviceWorker.ready;
}

async function turnOn() {
  problem.hidden = true;
  enable.disabled = true;
  try {
    const permission = await Notification.requestPermission();
    if (permission !== "granted") {
      throw new Error("Notifications are blocked for this site: allow them in the browser's site settings.");
    }
    const ready = await worker();
    const { public_key: publicKey } = await apiJson("GET", "/api/push/key/");
    const subscription = await ready.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: keyBytes(publicKey),
    });
    const saved = await apiJson("POST", "/api/push/subscriptions/", {
      ...subscription.toJSON(),
      user_agent: navigator.userAgent,
    });
    localStorage.setItem(SAVED_ID, saved.id);
    say("Notifications are on in this browser.");
    disable.hidden = false;
  } catch (error) {
    fail(error.message || String(error));
  } finally {
    enable.disabled = false;
  }
}

async function turnOff() {
  problem.hidden = true;
  try {
    const ready = await worker();
    const subscription = await ready.pushManager.getSubscription();
    await subscription?.unsubscribe();
    // The server forgets it now; without the id it would at the next delivery (the push service answers 410).
    const id = localStorage.getItem(SAVED_ID);
    if (id) {
      await apiJson("DELETE", `/api/push/subscriptions/${encodeURIComponent(id)}/`).catch(() => null);
      localStorage.removeItem(SAVED_ID);
    }
    say("Notifications are off in this browser.");
    disable.hidden = true;
  } catch (error) {
    fail(error.message || String(error));
  }
}

async function showState() {
  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
    enable.disabled = true;
    say("This browser cannot show notifications from a web app (on an iPhone: add Elion to the Home Screen first).");
    return;
  }
  const ready = await registration;
  const subscription = ready ? await ready.pushManager.getSubscription().catch(() => null) : null;
  if (subscription && Notification.permission === "granted") {
    say("Notifications are on in this browser.");
    disable.hidden = false;
  }
}

if (section && enable) {
  enable.addEventListener("click", turnOn);
  disable?.addEventListener("click", turnOff);
  showState();
}
