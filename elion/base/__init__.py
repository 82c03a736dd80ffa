"""The project's base: settings readers, errors and the JSON error shape, row and input checks, full-text
tokens, redaction, request bounds, the database backend, and the domain events the services send
(`domain_events`). Bottom layer with the models: imports no app code above it.
"""
