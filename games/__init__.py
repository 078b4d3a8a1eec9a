"""Reference rules (numpy only), one package per game: the ground truth for every other implementation."""
