"""Project-wide operations over every app: whole-instance backup and restore (`backup/`) and token usage and
cost (`usage`). Services layer: called by transports and commands, never by the continuity rules or the transcript.
"""
