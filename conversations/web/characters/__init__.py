"""Characters: Character Studio's characters, as an API and as pages."""
