"""Attachments: uploading a file and serving its verified bytes."""
