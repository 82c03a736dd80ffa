"""Usage: provider-reported usage and its cost, as an API, the Settings -> Usage page and the chat
page's fragment.
"""
