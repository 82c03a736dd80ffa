"""Running a check-in: its trigger and its reply through the ordinary send path (`conversations.sending`);
and the check-ins' tool for the model (`tools`: `propose_check_in`), added to the send's table of tools."""
