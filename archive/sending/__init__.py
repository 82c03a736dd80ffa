"""The Archive's part of a send: its tools for the model (`tools`), added to the send's table of tools.

The sending layer, beside `conversations.sending`, whose tool loop it plugs into.
"""
