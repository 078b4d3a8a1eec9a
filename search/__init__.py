"""Game- and network-agnostic tree search (PUCT, Gumbel root with sequential halving).

The caller brings a `GameAdapter` for its game and an `Evaluator` (its network, batched); the
search brings neither. Values are always from the perspective of a player: the player to move at
the state evaluated, and the player to move at the root in what the search returns.
"""

from search.gumbel import halving_schedule, run_gumbel
from search.policy import visit_policy
from search.puct import run_puct
from search.types import Evaluator, GameAdapter, GumbelOutput, SearchOutput, State

__all__ = [
    "Evaluator",
    "GameAdapter",
    "GumbelOutput",
    "SearchOutput",
    "State",
    "halving_schedule",
    "run_gumbel",
    "run_puct",
    "visit_policy",
]
