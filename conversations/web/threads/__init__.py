"""Threads: the conversations themselves (list, create, rename, move, rewind, switch, delete, export)
and the chat page that shows one.
"""
