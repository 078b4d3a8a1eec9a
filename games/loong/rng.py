"""Seeds and a tiny portable random stream (splitmix64), so every random choice is reproducible in C too.

The match seed is an unsigned 64-bit integer. Dragon ``i``'s seed is the ``(i + 1)``-th output of a
splitmix64 generator whose state starts at the match seed (docs/loong-rules.md, "Seeds").
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment (2^64 / golden ratio, odd)
MIX1, MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's two finaliser multipliers


def mix64(z: int) -> int:
    """splitmix64's output function: a bijective 64-bit finaliser."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


def dragon_seed(match_seed: int, dragon_id: int) -> int:
    """Seed of dragon ``dragon_id``: splitmix64 output number ``dragon_id + 1`` from state ``match_seed``."""
    return mix64((match_seed + (dragon_id + 1) * GOLDEN) & MASK64)


def check_seed(seed: object) -> int:
    """Return ``seed`` if it is an unsigned 64-bit integer, else raise ValueError."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MASK64:
        raise ValueError(f"seed must be an integer in [0, 2^64), got {seed!r}")
    return seed


class SplitMix64:
    """The splitmix64 stream: ``next()`` gives uint64 values; ``below(n)`` an integer in [0, n)."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = check_seed(seed)

    def next(self) -> int:
        self.state = (self.state + GOLDEN) & MASK64
        return mix64(self.state)

    def below(self, n: int) -> int:
        """Multiply-shift reduction (Lemire): top bits of next() * n; bias < n / 2^64."""
        if n <= 0:
            raise ValueError("below(n) needs n >= 1")
        return (self.next() * n) >> 64
