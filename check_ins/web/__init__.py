"""Check-ins over HTTP (docs/api.md "Check-ins"): thin views over `check_ins.services` and `check_ins.sending`."""
