{% load static %}// Elion's service worker (docs/push.md), served at /sw.js so its scope is the whole app.
// It shows the notifications the server pushes and opens the reply they name. It does not touch fetches:
// every page is fetched from the network as without it.
"use strict";

const ICON = "{% static 'icons/elion-192.png' %}";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

// Only a path of this site is ever opened: a payload naming another origin opens the home page instead.
function sameSiteUrl(candidate) {
  try {
    const url = new URL(typeof candidate === "string" ? candidate : "/", self.location.origin);
    return url.origin === self.location.origin ? url.href : new URL("/", self.location.origin).href;
  } catch (error) {
    return new URL("/", self.location.origin).href;
  }
}

function notificationFrom(data) {
  const title = typeof data.title === "string" && data.title ? data.title : "Elion wrote";
  const options = {
    tag: typeof data.tag === "string" && data.tag ? data.tag : "elion",
    icon: ICON,
    badge: ICON,
    data: { url: sameSiteUrl(data.url) },
  };
  // The server sends the reply's text only when the owner turned it on (Settings → Notifications).
  if (typeof data.text === "string" && data.text) options.body = data.text;
  return { title, options };
}

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (error) {
    data = {};
  }
  const { title, options } = notificationFrom(data && typeof data === "object" ? data : {});
  event.waitUntil(self.registration.showNotification(title, options));
});

// Focus a window already showing the reply; else take a window of the app to it; else open one.
async function openReply(target) {
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const exact = windows.find((client) => client.url === target);
  if (exact) return exact.focus();
  // Only a window this worker controls can be navigated by it.
  const [controlled] = await self.clients.matchAll({ type: "window" });
  if (controlled) {
    try {
      await controlled.focus();
    } catch (error) {
      // Focusing needs the click's user activation; navigating does not.
    }
    return controlled.navigate(target);
  }
  return self.clients.openWindow(target);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const target = sameSiteUrl(event.notification.data && event.notification.data.url);
  event.waitUntil(openReply(target));
});
