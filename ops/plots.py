"""Pictures for league results: Elo with 95% intervals, and the pairwise score-rate matrix."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from games.league import LeagueResult  # noqa: E402


def league_png(result: LeagueResult, path: str | Path, title: str) -> Path:
    """Two panels: Elo with intervals (best at the top) and who scored what against whom."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ratings = list(reversed(result.ratings))
    names = [r.player for r in result.ratings]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 0.55 * len(names) + 2.5))
    y = np.arange(len(ratings))
    elo = np.array([r.elo for r in ratings])
    err = np.array([[r.elo - r.low for r in ratings], [r.high - r.elo for r in ratings]])
    ax1.errorbar(elo, y, xerr=err, fmt="o", capsize=4, color="tab:blue")
    ax1.set_yticks(y, [r.player for r in ratings])
    ax1.set_xlabel("Elo (95% interval)")
    ax1.grid(axis="x", alpha=0.3)
    ax1.set_title(title)
    m = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            t = result.tally(a, b) if a != b else None
            if t is not None and t.games:
                m[i, j] = t.score_rate
    im = ax2.imshow(m, cmap="RdYlGn", vmin=0, vmax=1)
    ax2.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax2.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(m[i, j]):
                ax2.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=8)
    ax2.set_title("score rate of row against column")
    fig.colorbar(im, ax=ax2, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
