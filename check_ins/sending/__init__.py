"""Running a check-in: its trigger and its reply through the ordinary send path (`conversations.sending`)."""
