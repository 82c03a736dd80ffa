"""The ChatGPT export importer: `parse` reads the export (every branch of each conversation, its images),
`store` maps each conversation onto an archive document and stores it."""
