"""Loong as a PettingZoo AEC environment: one agent per living dragon, in the engine's turn order.

Agents are named ``dragon_<id>``. A dragon's agent appears at its birth (the six starting dragons at
``reset``, a split's child when it is born) and is removed after it dies: its termination is set at
once (even when it dies in another dragon's turn, e.g. a head-on) and it is selected next for its
dead step (``step(None)``) before play goes on. ``possible_agents`` is ``dragon_0 .. dragon_<max_dragons-1>``;
a split that would create a dragon id beyond that is masked out (and refused if taken anyway).

Observation: ``{"observation": Box(0, 255, [obs_bytes], uint8), "action_mask": Box(0, 1, [n_actions], int8)}``.
``observation`` is the engine's flat little-endian encoding (``games.loong.observation.encode``,
docs/loong-observation.md) of the dragon's observation, zero-padded to ``obs_bytes =
encoded_size(max_body, max_inbox)``. A body longer than ``max_body`` keeps its first ``max_body``
segments and an inbox keeps its first ``max_inbox`` values (the header's counts say what is kept).
Dead agents see their last observation with an all-zero mask.

Action (Discrete(n_actions)), with ``max_split = S`` and ``max_sprint = K``::

    0 .. 3                          MOVE N, E, S, W
    4 .. 3 + S                      SPLIT k, k = a - 3 (1 .. S)
    4 + S + sum(4^j, j = 2..k-1) + code   SPRINT of k steps (k = 2 .. K): step j's direction is
                                    (code >> 2 j) & 3, first step in the lowest bits

so the defaults S = 8, K = 3 give 4 + 8 + 16 + 64 = 92 actions. The mask marks actions the rules
accept for the dragon now (SPLIT k <= L - 1 with fewer than 64 living teammates, SPRINT k <= ceil(L/4)
+ L - 1); it does not say whether they are safe. A masked action taken anyway is an invalid turn: the
dragon dies, as in the judge. The env sends no sonar.

Rewards: 0 during play; when the game ends, +1 to every living dragon of the winning team, -1 to
every living dragon of the losing team, 0 to all on a draw. Games end by elimination or after
``max_rounds`` rounds (a termination, not a truncation: the rules end the game).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from games.loong.actions import MAX_TEAM, Action, Forfeit, Move, Split, Sprint, check_action, free_steps
from games.loong.engine import Game
from games.loong.mapgen import generate_map
from games.loong.maps import LoongMap
from games.loong.observation import encode, encoded_size, observe

MAX_SPLIT = 8
MAX_SPRINT = 3


def action_count(max_split: int = MAX_SPLIT, max_sprint: int = MAX_SPRINT) -> int:
    return 4 + max_split + sum(4 ** k for k in range(2, max_sprint + 1))


def decode_action(a: int, max_split: int = MAX_SPLIT, max_sprint: int = MAX_SPRINT) -> Action:
    """The engine action for discrete action ``a`` (mapping in the module docstring)."""
    a = int(a)
    if not 0 <= a < action_count(max_split, max_sprint):
        raise ValueError(f"action {a} outside [0, {action_count(max_split, max_sprint)})")
    if a < 4:
        return Move(a)
    if a < 4 + max_split:
        return Split(a - 3)
    code = a - 4 - max_split
    for k in range(2, max_sprint + 1):
        if code < 4 ** k:
            return Sprint(tuple((code >> (2 * j)) & 3 for j in range(k)))
        code -= 4 ** k
    raise AssertionError("unreachable")


def encode_action(action: Action, max_split: int = MAX_SPLIT, max_sprint: int = MAX_SPRINT) -> int:
    """Inverse of decode_action; ValueError for actions outside the discrete set."""
    if isinstance(action, Move):
        return action.direction
    if isinstance(action, Split) and 1 <= action.k <= max_split:
        return 3 + action.k
    if isinstance(action, Sprint) and 2 <= len(action.directions) <= max_sprint:
        base = 4 + max_split + sum(4 ** j for j in range(2, len(action.directions)))
        return base + sum(d << (2 * j) for j, d in enumerate(action.directions))
    raise ValueError(f"{action!r} has no discrete action")


class LoongEnv(AECEnv):
    metadata = {"render_modes": ["ansi"], "name": "loong_v0", "is_parallelizable": False}

    def __init__(
        self,
        game_map: LoongMap | None = None,
        size: int = 12,
        symmetry: str = "lr",
        max_rounds: int = 500,
        max_dragons: int = 256,
        max_body: int = 256,
        max_inbox: int = 16,
        max_split: int = MAX_SPLIT,
        max_sprint: int = MAX_SPRINT,
        render_mode: str | None = None,
    ) -> None:
        """``game_map`` fixes the board; else each reset generates a ``size`` x ``size`` map with the
        reset's seed. ``reset(options={"map": LoongMap})`` overrides both for one game."""
        super().__init__()
        self.fixed_map, self.size, self.symmetry = game_map, size, symmetry
        self.max_rounds, self.max_dragons = max_rounds, max_dragons
        self.max_body, self.max_inbox = max_body, max_inbox
        self.max_split, self.max_sprint = max_split, max_sprint
        self.render_mode = render_mode
        self.n_actions = action_count(max_split, max_sprint)
        self.obs_bytes = encoded_size(max_body, max_inbox)
        self.possible_agents = [f"dragon_{i}" for i in range(max_dragons)]
        space = spaces.Dict({
            "observation": spaces.Box(0, 255, (self.obs_bytes,), dtype=np.uint8),
            "action_mask": spaces.Box(0, 1, (self.n_actions,), dtype=np.int8),
        })
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(self.n_actions) for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self.game: Game | None = None
        self.agents = []

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    # -- lifecycle -------------------------------------------------------------------------------
    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        match_seed = int(self._rng.integers(2**63))
        game_map = (options or {}).get("map") or self.fixed_map
        if game_map is None:
            game_map = generate_map(self.size, self.size, self.symmetry, int(self._rng.integers(2**31)))
        self.game = Game(game_map, match_seed, self.max_rounds)
        self.agents = []
        self.rewards, self._cumulative_rewards = {}, {}
        self.terminations, self.truncations, self.infos = {}, {}, {}
        self._last_obs: dict[str, dict] = {}
        for i in sorted(self.game.dragons):
            self._add_agent(i)
        self._skip_agent_selection = None
        self.game.begin_round()
        self.agent_selection = self._name(self.game.next_actor())

    def _name(self, dragon_id: int) -> str:
        return f"dragon_{dragon_id}"

    def _add_agent(self, dragon_id: int) -> None:
        a = self._name(dragon_id)
        self.agents.append(a)
        self.rewards[a] = self._cumulative_rewards[a] = 0.0
        self.terminations[a] = self.truncations[a] = False
        self.infos[a] = {"dragon_id": dragon_id, "team": self.game.dragons[dragon_id].team}

    # -- observation -----------------------------------------------------------------------------
    def action_mask(self, dragon_id: int) -> np.ndarray:
        g = self.game
        d = g.dragons[dragon_id]
        mask = np.zeros(self.n_actions, np.int8)
        if not d.alive or g.over:
            return mask
        length, living = len(d.body), g.living[d.team]
        mask[:4] = 1
        if g.next_id < self.max_dragons and living < MAX_TEAM:
            mask[4:4 + min(self.max_split, length - 1)] = 1
        base = 4 + self.max_split
        free = free_steps(length)
        for k in range(2, self.max_sprint + 1):
            if k <= free + length - 1:
                mask[base:base + 4 ** k] = 1
            base += 4 ** k
        return mask

    def observe(self, agent):
        dragon_id = int(agent.split("_")[1])
        d = self.game.dragons.get(dragon_id)
        if d is None or not d.alive:
            last = self._last_obs.get(agent)
            obs = last["observation"] if last is not None else np.zeros(self.obs_bytes, np.uint8)
            return {"observation": obs, "action_mask": np.zeros(self.n_actions, np.int8)}
        o = observe(self.game, dragon_id)
        if len(o.body) > self.max_body or len(o.inbox) > self.max_inbox:
            from dataclasses import replace

            o = replace(o, body=o.body[:self.max_body], inbox=o.inbox[:self.max_inbox])
        buf = np.zeros(self.obs_bytes, np.uint8)
        raw = np.frombuffer(encode(o), np.uint8)
        buf[:raw.size] = raw
        out = {"observation": buf, "action_mask": self.action_mask(dragon_id)}
        self._last_obs[agent] = out
        return out

    # -- step ------------------------------------------------------------------------------------
    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        for a in self.agents:
            self.rewards[a] = 0.0
        g = self.game
        dragon_id = int(agent.split("_")[1])
        turn = self._engine_action(dragon_id, action)
        outcome = g.turn(dragon_id, turn, None)
        if g.over:  # an elimination cuts the round short: close it, so its state hash is recorded (decision 15)
            g.end_round()
        for dead, _cause in outcome.deaths:
            self.terminations[self._name(dead)] = True
            self.infos[self._name(dead)] = {**self.infos[self._name(dead)], "cause": _cause}
        if outcome.born is not None:
            self._add_agent(outcome.born)
        next_id = self._advance()
        if g.over:
            self._finish()
        self._select(next_id)
        self._accumulate_rewards()
        if self.render_mode == "ansi":
            print(self.render())

    def _engine_action(self, dragon_id: int, action) -> Action:
        if action is None:
            return Forfeit("no action")
        try:
            a = decode_action(int(action), self.max_split, self.max_sprint)
        except (TypeError, ValueError) as e:
            return Forfeit(f"bad action {action!r}: {e}")
        d = self.game.dragons[dragon_id]
        if isinstance(a, Split) and self.game.next_id >= self.max_dragons:
            return Forfeit(f"split beyond max_dragons={self.max_dragons}")
        reason = check_action(a, len(d.body), self.game.living[d.team])
        return a if reason is None else Forfeit(reason)

    def _advance(self) -> int | None:
        """The next dragon to act, closing and opening rounds as needed; None when the game is over."""
        g = self.game
        while not g.over:
            i = g.next_actor()
            if i is not None:
                return i
            g.end_round()
            if not g.over:
                g.begin_round()
        return None

    def _finish(self) -> None:
        winner = self.game.result.winner
        for a in self.agents:
            if not self.terminations[a]:
                team = self.infos[a]["team"]
                self.rewards[a] = 0.0 if winner is None else (1.0 if team == winner else -1.0)
            self.terminations[a] = True

    def _select(self, next_id: int | None) -> None:
        dead = [a for a in self.agents if self.terminations[a] or self.truncations[a]]
        live = self._name(next_id) if next_id is not None else None
        if dead:
            self._skip_agent_selection = live
            self.agent_selection = dead[0]
        else:
            self._skip_agent_selection = None
            self.agent_selection = live

    def _dead_step(self, action) -> None:
        if action is not None:
            raise ValueError("when an agent is dead, the only valid action is None")
        agent = self.agent_selection
        for table in (self.terminations, self.truncations, self.rewards, self._cumulative_rewards, self.infos):
            del table[agent]
        self.agents.remove(agent)
        for a in self.agents:
            self.rewards[a] = 0.0
        live = self._skip_agent_selection
        dead = [a for a in self.agents if self.terminations[a] or self.truncations[a]]
        if dead:
            self.agent_selection = dead[0]
        elif live is not None:
            self._skip_agent_selection = None
            self.agent_selection = live

    # -- rendering -------------------------------------------------------------------------------
    def render(self):
        if self.game is None:
            return ""
        g, m = self.game, self.game.map
        rows = []
        for y in range(m.height):
            row = []
            for x in range(m.width):
                c = m.cell(x, y)
                o = g.occ[c]
                if o >= 0:
                    ch = str(o % 10) if g.dragons[o].body[0] == c else "ox"[g.dragons[o].team]
                else:
                    ch = "*" if g.pearls[c] else "."
                row.append(ch)
            rows.append("".join(row))
        return f"round {g.round}\n" + "\n".join(rows)

    def close(self):
        pass


def env(**kwargs) -> LoongEnv:
    return LoongEnv(**kwargs)
