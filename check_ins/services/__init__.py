"""Check-in services: the schedule's arithmetic (pure), the owner's writes, the claims of due times."""
