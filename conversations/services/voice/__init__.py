"""Voice beside the send (issue 43, docs/voice.md): transcription of a recording and speech of a reply.

Neither writes a turn: dictated words go to the composer and are sent through the ordinary send.
"""
