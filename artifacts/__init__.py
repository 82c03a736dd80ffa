"""Artifacts: standalone pieces (poems, reflections, letters, stories) the model creates with a tool, kept in versions."""
