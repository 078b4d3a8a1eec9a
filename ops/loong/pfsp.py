"""Prioritised fictitious self-play (PFSP, Vinyals et al. 2019): the current player's league opponents drawn
with weight f(p), p its win rate against each, read from the league's stored history.

    rates = win_rates(history, "build:expert-0", pool)       # smoothed score rates from every stored pass
    weights = pfsp_weights(rates)                            # f_hard(p) = (1 - p)^2, normalised
    opponents = sample(weights, draws=6, seed=pass_seed)     # with replacement, one draw a map

The choice: AlphaStar's "hard" weighting f(p) = (1 - p)^HARD_POWER with HARD_POWER = 2: an opponent the current
player always beats is (almost) never drawn, one it loses to most. p is Laplace-smoothed, (score + 1) / (games + 2)
(draws score 1/2), so an opponent never met has p = 1/2 and weight 1/4, and no opponent's weight is ever exactly 0
(a learner that once beat everyone still meets each again, more rarely).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

HARD_POWER = 2.0
"""The exponent of f_hard (AlphaStar's PFSP weighting used for its main agents' league opponents)."""


class PfspError(ValueError):
    """A PFSP request that cannot be served; the message names the field."""


def pfsp_weight(p: float) -> float:
    """f_hard(p) = (1 - p)^2 for the current player's win rate p against an opponent."""
    if not 0.0 <= p <= 1.0:
        raise PfspError(f"win rate: must be in [0, 1], got {p}")
    return (1.0 - p) ** HARD_POWER


def win_rates(history: Iterable[Mapping], current: str, opponents: Sequence[str]) -> dict[str, float]:
    """The current player's smoothed score rate against each opponent over every stored pass: each pass record's
    ``pairings`` rows ({a, b, wins, draws, losses}), either orientation."""
    score = {o: 0.0 for o in opponents}
    games = {o: 0 for o in opponents}
    for record in history:
        for row in record.get("pairings", ()):
            a, b = row["a"], row["b"]
            if a == current and b in score:
                score[b] += row["wins"] + 0.5 * row["draws"]
                games[b] += row["wins"] + row["draws"] + row["losses"]
            elif b == current and a in score:
                score[a] += row["losses"] + 0.5 * row["draws"]
                games[a] += row["wins"] + row["draws"] + row["losses"]
    return {o: (score[o] + 1.0) / (games[o] + 2.0) for o in opponents}


def pfsp_weights(rates: Mapping[str, float]) -> dict[str, float]:
    """f_hard of each rate, normalised to sum 1 (in the rates' order)."""
    if not rates:
        raise PfspError("opponents: PFSP needs at least one opponent")
    raw = {o: pfsp_weight(p) for o, p in rates.items()}
    total = sum(raw.values())
    if total <= 0:
        raise PfspError(f"win rates: every opponent is beaten for certain ({dict(rates)}); nothing to draw")
    return {o: w / total for o, w in raw.items()}


def sample(weights: Mapping[str, float], draws: int, seed: int) -> list[str]:
    """``draws`` opponents drawn with replacement by ``weights`` (a seeded numpy Generator: the same seed, the
    same opponents)."""
    if draws < 0:
        raise PfspError(f"draws: must be at least 0, got {draws}")
    names = list(weights)
    if not names:
        raise PfspError("opponents: PFSP needs at least one opponent")
    p = np.array([weights[n] for n in names], dtype=float)
    picks = np.random.default_rng(seed).choice(len(names), size=draws, p=p / p.sum())
    return [names[i] for i in picks]
