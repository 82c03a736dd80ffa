"""Conversation services: threads (create, fork, titles), visibility transitions and past-chat search,
characters and the assistant settings save. Services layer: above `continuity.rules` and `transcript`, below `sending`.
"""
