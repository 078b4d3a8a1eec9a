"""search package (in progress)."""
