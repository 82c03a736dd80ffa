"""The export importers, one package per source: `chatgpt` and `claude` each read their export (`parse`) and
store what they read as archive documents (`store`, through `archive.services.documents`); `export_reader`
reads the upload's files for both, and `export_steps` holds the steps both share."""
