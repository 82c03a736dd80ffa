"""Web Push's transports (issue 44, docs/push.md): the key and subscriptions API, and the service worker."""
