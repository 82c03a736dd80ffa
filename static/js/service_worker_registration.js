// Every page: register the service worker (served at /sw.js, docs/push.md) so that notifications reach this
// browser and the app can be installed. It shows notifications only; pages load from the network as before.
export const registration =
  "serviceWorker" in navigator && window.isSecureContext
    ? navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => null)
    : Promise.resolve(null);
