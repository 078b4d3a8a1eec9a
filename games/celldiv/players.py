"""Cell Division's built-in players: random, easy, medium, hard and switching (linear tiers).

A player is an object with ``name`` and ``choose(state) -> cell`` (a row-major index of an EMPTY
cell). Players that sample take an explicit seed. ``make_player(name, seed)`` builds any
registered player; higher layers register more (trained weights, the ONNX Elite, the teacher).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from games.celldiv.board import State, legal_moves
from games.celldiv.features import counts, features

# The seed's shipped Hard vector, feature order 0..12 (src/engine/ai/weights.ts).
HARD_WEIGHTS = np.array(
    [4.09, 4.34, 14.49, -1.73, -1.65, 1.90, 1.82, -1.84, -1.52, -3.89, -0.77, -0.37, -3.51]
)
MEDIUM_WEIGHTS = np.array([1.0, 1.0, 0.3] + [0.0] * 10)
HARD_BLEND = 0.75  # blended = 0.75 x MEDIUM + 0.25 x trained
EASY_TEMPERATURE = 1.5
WEIGHTS_DIR = Path(__file__).with_name("weights")
DEFAULT_SWITCHING = WEIGHTS_DIR / "switching-v0.json"


class Player(Protocol):
    name: str

    def choose(self, state: State) -> int: ...


class UnknownPlayer(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class WeightsError(ValueError):
    """A weight file that is missing, malformed or of the wrong kind; the message names file and field."""


def _argmax_first(scores: np.ndarray) -> int:
    """Index of the maximum; remaining ties go to the lowest index (cells are in row-major order)."""
    return int(np.flatnonzero(scores == scores.max())[0])


def linear_scores(feats: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``feats[:, :n] . weights`` (n = len(weights)) for every row, summed feature by feature in one fixed order.

    Every row's score is the same sequence of float64 operations on its own values, so identical feature
    rows get bit-identical scores and their tie goes to the lowest index. (A BLAS matrix-vector product
    blocks rows by position and can round two identical rows differently in the last bit.)"""
    weights = np.asarray(weights, dtype=np.float64)
    scores = feats[:, 0] * weights[0]
    for j in range(1, len(weights)):
        scores += feats[:, j] * weights[j]
    return scores


@dataclass
class RandomPlayer:
    seed: int = 0
    name: str = "random"

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def choose(self, state: State) -> int:
        return int(self.rng.choice(legal_moves(state)))


@dataclass
class EasyPlayer:
    """openness - 0.3 x boundary_neighbors, sampled from softmax(score / 1.5)."""

    seed: int = 0
    name: str = "easy"

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def choose(self, state: State) -> int:
        cells, f = features(state)
        z = (f[:, 2] - 0.3 * f[:, 9]) / EASY_TEMPERATURE
        p = np.exp(z - z.max())
        return int(cells[self.rng.choice(len(cells), p=p / p.sum())])


@dataclass
class MediumPlayer:
    """immediate_ai + immediate_opp + 0.3 x openness, argmax; ties to the lowest row-major index."""

    name: str = "medium"

    def choose(self, state: State) -> int:
        # integer form of (d_ai + d_opp) / 8 + 0.3 x empty / 8, times 80: exact ties, no float fuzz
        c = counts(state)
        total = 10 * (c.delta_ai + c.delta_opp) + 3 * c.empty8
        return int(c.cells[_argmax_first(total)])


@dataclass
class LinearPlayer:
    """score = features[0:13] . weights; argmax, exact ties to the lowest row-major index. Hard is this with
    the blended vector."""

    weights: np.ndarray
    name: str = "linear"

    def choose(self, state: State) -> int:
        cells, f = features(state)
        return int(cells[_argmax_first(linear_scores(f, self.weights))])


def blend_hard(trained: np.ndarray) -> np.ndarray:
    """0.75 x MEDIUM_WEIGHTS + 0.25 x trained, as the seed's Hard tier plays."""
    trained = np.asarray(trained, dtype=np.float64)
    if trained.shape != (13,):
        raise WeightsError(f"a Hard weight vector has 13 entries, got shape {trained.shape}")
    return HARD_BLEND * MEDIUM_WEIGHTS + (1 - HARD_BLEND) * trained


def hard_player(weights: np.ndarray = HARD_WEIGHTS, name: str = "hard") -> LinearPlayer:
    return LinearPlayer(blend_hard(weights), name=name)


@dataclass
class SwitchingPlayer:
    """Switching linear: sum_j f_j (w_early_j (1 - gp) + w_late_j gp), gp = game_progress; argmax, exact ties to
    the lowest row-major index."""

    w_early: np.ndarray
    w_late: np.ndarray
    name: str = "switching"

    def choose(self, state: State) -> int:
        cells, f = features(state)
        gp = f[0, 13]
        w = self.w_early * (1 - gp) + self.w_late * gp
        return int(cells[_argmax_first(linear_scores(f, w))])


def load_weights(path: str | Path) -> dict:
    """Read a versioned weight JSON (kind ``linear`` with ``weights`` [13], or ``switching_linear``
    with ``w_early`` and ``w_late`` [13] each). Errors name the file and the field."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise WeightsError(f"{path}: weight file not found") from None
    except json.JSONDecodeError as e:
        raise WeightsError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise WeightsError(f"{path}: top level must be an object")
    for key in ("format", "kind"):
        if key not in doc:
            raise WeightsError(f"{path}: missing field {key!r}")
    if doc["format"] != 1:
        raise WeightsError(f"{path}: field 'format' is {doc['format']!r}; this version reads format 1")
    fields = {"linear": ("weights",), "switching_linear": ("w_early", "w_late")}.get(doc["kind"])
    if fields is None:
        raise WeightsError(f"{path}: field 'kind' is {doc['kind']!r}; expected 'linear' or 'switching_linear'")
    for key in fields:
        v = doc.get(key)
        if not isinstance(v, list) or len(v) != 13 or not all(isinstance(x, int | float) for x in v):
            raise WeightsError(f"{path}: field {key!r} must be a list of 13 numbers, got {v!r}")
        if not all(np.isfinite(v)):
            raise WeightsError(f"{path}: field {key!r} holds a non-finite number")
    return doc


def save_weights(path: str | Path, kind: str, *, version: str, source: str, **vectors) -> Path:
    """Write a versioned weight JSON that ``load_weights`` reads back."""
    from games.celldiv.features import FEATURE_NAMES

    doc = {"format": 1, "kind": kind, "version": version, "source": source,
           "feature_names": list(FEATURE_NAMES[:13])}
    doc.update({k: [float(x) for x in np.asarray(v).ravel()] for k, v in vectors.items()})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)  # atomic: a killed writer never leaves half a file
    load_weights(path)
    return path


def switching_player(path: str | Path = DEFAULT_SWITCHING, name: str = "switching") -> SwitchingPlayer:
    doc = load_weights(path)
    if doc["kind"] != "switching_linear":
        raise WeightsError(f"{path}: field 'kind' is {doc['kind']!r}; the switching tier needs 'switching_linear'")
    return SwitchingPlayer(np.array(doc["w_early"]), np.array(doc["w_late"]), name=name)


def linear_player_from_file(path: str | Path, name: str) -> LinearPlayer:
    """A trained 13-weight vector, played blended with Medium exactly as the seed's Hard is."""
    doc = load_weights(path)
    if doc["kind"] != "linear":
        raise WeightsError(f"{path}: field 'kind' is {doc['kind']!r}; expected 'linear'")
    return hard_player(np.array(doc["weights"]), name=name)


Factory = Callable[[int], Player]
_REGISTRY: dict[str, Factory] = {
    "random": lambda seed: RandomPlayer(seed),
    "easy": lambda seed: EasyPlayer(seed),
    "medium": lambda seed: MediumPlayer(),
    "hard": lambda seed: hard_player(),
    "switching": lambda seed: switching_player(),
}
BUILTIN_TIERS = ("random", "easy", "medium", "hard", "switching")


def register_player(name: str, factory: Factory) -> None:
    """Make ``name`` available to ``make_player`` (trained tiers, Elite, the teacher register here)."""
    _REGISTRY[name] = factory


def player_names() -> list[str]:
    return sorted(_REGISTRY)


def make_player(name: str, seed: int = 0) -> Player:
    """A fresh player by name; ``seed`` drives any sampling it does."""
    if name not in _REGISTRY:
        raise UnknownPlayer(f"unknown player {name!r}; known players: {', '.join(player_names())}")
    return _REGISTRY[name](seed)
