"""Continuity's services: Branch and Fresh Chat (`branching`), the branch history, the new chat's handoff.
Services layer: they create threads and call the continuity rules.
"""
