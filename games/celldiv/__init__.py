"""games/celldiv package."""
