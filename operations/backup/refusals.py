"""The one error every backup check raises: the backup cannot be used here, and the message says why."""


class BackupRefused(Exception):
    """The backup cannot be restored (or verified) here; the message says why, for the owner."""
