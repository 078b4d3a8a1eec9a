# %% [markdown]
# # Cell Division tiers: what the linear weights look at
#
# A percent-format notebook (open it in Jupyter with jupytext, or run it as a script). It
# imports the packages and is never imported by them; `tests/test_notebooks.py` executes it.

# %%
import numpy as np

from games.celldiv.board import legal_moves, play, random_start
from games.celldiv.features import FEATURE_NAMES, features
from games.celldiv.match import play_match
from games.celldiv.players import HARD_WEIGHTS, MEDIUM_WEIGHTS, blend_hard

# %% [markdown]
# ## The seed's Hard vector against Medium's, and the blend the Hard tier plays

# %%
blend = blend_hard(HARD_WEIGHTS)
for name, h, m, b in zip(FEATURE_NAMES[:13], HARD_WEIGHTS, MEDIUM_WEIGHTS, blend):
    print(f"{name:>22}  hard {h:+6.2f}  medium {m:+5.2f}  blended {b:+6.2f}")

# %% [markdown]
# ## Feature ranges over random mid-game positions

# %%
rng = np.random.default_rng(0)
rows = []
for _ in range(200):
    s = random_start(int(rng.integers(4, 9)), rng)
    for _ in range(int(rng.integers(0, 12))):
        if len(legal_moves(s)) > 1:
            s = play(s, int(rng.choice(legal_moves(s))))
    rows.append(features(s)[1])
allf = np.concatenate(rows)
for k, name in enumerate(FEATURE_NAMES):
    print(f"{name:>22}  min {allf[:, k].min():.3f}  mean {allf[:, k].mean():.3f}  max {allf[:, k].max():.3f}")
assert (allf[:, 2:] <= 1).all() and (allf[:, 2:] >= 0).all()

# %% [markdown]
# ## How much each tier gains from the blend

# %%
for a, b in [("hard", "medium"), ("switching", "hard")]:
    s = play_match(a, b, games=20, sizes="4-8", seed=1).summary()
    print(f"{a} vs {b}: score rate {s['score_rate']:.2f} [{s['wilson_low']:.2f}, {s['wilson_high']:.2f}]")
