"""The project's base: settings readers, errors and the JSON error shape, row and input checks, full-text
tokens, redaction, request bounds, the database backend. Bottom layer with the models: imports no app code above it.
"""
