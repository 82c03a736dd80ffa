"""Serving: `make run` starting and stopping, static files as a server finds them."""
