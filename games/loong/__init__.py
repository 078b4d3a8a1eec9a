"""games/loong package (in progress)."""
