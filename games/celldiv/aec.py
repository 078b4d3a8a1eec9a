"""Cell Division as a PettingZoo AEC environment (agents ``player_0`` and ``player_1``).

Observation: ``{"observation": [3, 8, 8] float32 (mover's stones, opponent's, legal cells, board
centred), "action_mask": [64] int8}``; action: one of the 64 grid positions. A game ends when the
board is full: reward +1 / -1 / 0 by the sign of the margin. An illegal action ends the game with
-1 for the player who made it and +1 for the other, as PettingZoo's classic board games do.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from games.celldiv.board import State, is_over, margin, play, random_start
from games.celldiv.encoding import GRID, NUM_ACTIONS, action_mask, action_to_cell, encode


class CellDivisionEnv(AECEnv):
    metadata = {"render_modes": ["ansi"], "name": "cell_division_v0", "is_parallelizable": False}

    def __init__(self, size: int | None = None, render_mode: str | None = None):
        """``size`` fixes the board (4..8); None draws it from 4..8 at each reset."""
        super().__init__()
        self.fixed_size = size
        self.render_mode = render_mode
        self.possible_agents = ["player_0", "player_1"]
        self.agents = []
        obs = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (3, GRID, GRID), dtype=np.float32),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = {a: obs for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self.state_: State | None = None

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        size = (options or {}).get("size", self.fixed_size) or int(self._rng.integers(4, 9))
        self.state_ = random_start(int(size), self._rng)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.state_.to_move]

    def observe(self, agent):
        p = self.possible_agents.index(agent)
        s = self.state_
        view = State(s.board.copy(), p)  # planes from this agent's point of view
        return {"observation": encode(view), "action_mask": action_mask(view).astype(np.int8)}

    def _finish(self, rewards: dict[str, float]) -> None:
        self.rewards = rewards
        self.terminations = {a: True for a in self.agents}

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        p = self.possible_agents.index(agent)
        other = self.possible_agents[1 - p]
        if action is None or not action_mask(self.state_)[int(action)]:
            self._finish({agent: -1.0, other: 1.0})
            self.infos[agent] = {"illegal_action": action}
        else:
            self.state_ = play(self.state_, action_to_cell(self.state_, int(action)))
            if is_over(self.state_):
                m = float(np.sign(margin(self.state_, p)))
                self._finish({agent: m, other: -m})
            else:
                self.rewards = {a: 0.0 for a in self.agents}
        self.agent_selection = other
        self._accumulate_rewards()
        if self.render_mode == "ansi":
            print(self.render())

    def render(self):
        return str(self.state_) if self.state_ is not None else ""

    def close(self):
        pass


def env(**kwargs) -> CellDivisionEnv:
    return CellDivisionEnv(**kwargs)
