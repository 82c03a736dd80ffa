"""Web Push to the owner's browsers and installed app (issue 44, docs/push.md): the VAPID key pair, the
subscriptions the browsers register, and `notify_owner`, which sends one notification to each of them."""
