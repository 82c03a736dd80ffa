"""Settings: the assistant settings (API and the Settings page)."""
