"""Rows the project package itself keeps: failed owner logins, for throttling."""

from __future__ import annotations

from django.db import models


class LoginFailure(models.Model):
    """Failed owner logins within the current window, for one client address or for everyone (`key`)."""

    key = models.CharField(max_length=100, unique=True)
    failures = models.PositiveIntegerField(default=0)
    window_started_at = models.DateTimeField()
    locked_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.failures} failures"
