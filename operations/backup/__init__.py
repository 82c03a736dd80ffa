"""Full backup and restore: one zip holding every row that matters and every attachment blob.

`members` says what a backup holds and how the zip is laid out (the format,
README "Backup and restore"); `writing` streams a backup with bounded memory;
`restoring` puts one back into an empty database and data dir. Services
layer: it reads the models of every app and the attachment store, nothing
above them.
"""
