"""Check-ins (issue 44): Elion writes first, when and how the owner scheduled it (docs/check_ins.md)."""
