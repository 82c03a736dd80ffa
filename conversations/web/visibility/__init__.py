"""Visibility: trash, restore, keep, release the shield, delete forever, and Past Conversation Search
(which honours them).
"""
