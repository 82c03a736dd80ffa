"""Owner access on the web: the login and logout pages, the login API and the health check."""
