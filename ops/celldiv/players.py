"""Players the pipeline trained, registered by name from the artifact store.

``hard-trained`` (PPO 13 weights, blended with Medium as Hard is), ``switching`` (the trained 26
weights replace the bundled placeholder once they exist), ``elite`` (the distilled CNN through
onnxruntime) and ``teacher`` (the AlphaZero teacher with search) appear once their assets exist.
"""

from __future__ import annotations

from pathlib import Path

from games.celldiv.players import linear_player_from_file, register_player, switching_player
from ops.store import ArtifactStore

GROUP = "celldiv"


def register_store_players(store: ArtifactStore | None = None, *, teacher_simulations: int = 64,
                           teacher_search: str | None = None) -> dict[str, Path]:
    """Register every trained player whose artifact is published; returns name -> file used.
    ``teacher_simulations`` and ``teacher_search`` (None: ``ops.celldiv.onnx.LEAGUE_SEARCH``): the
    ``teacher`` player's search a move."""
    store = store or ArtifactStore.default()
    found: dict[str, Path] = {}
    hard = store.latest(GROUP, "celldiv_hard_weights")
    if hard is not None and (hard / "weights.json").exists():
        path = hard / "weights.json"
        register_player("hard-trained", lambda seed, p=path: linear_player_from_file(p, "hard-trained"))
        found["hard-trained"] = path
    switching = store.latest(GROUP, "celldiv_switching_weights")
    if switching is not None and (switching / "weights.json").exists():
        path = switching / "weights.json"
        register_player("switching", lambda seed, p=path: switching_player(p))
        found["switching"] = path
    found.update(_register_networks(store, teacher_simulations, teacher_search))
    return found


def _register_networks(store: ArtifactStore, teacher_simulations: int, teacher_search: str | None,
                       ) -> dict[str, Path]:
    found: dict[str, Path] = {}
    onnx_dir = store.latest(GROUP, "celldiv_elite_onnx")
    teacher_dir = store.latest(GROUP, "celldiv_teacher")
    elite = onnx_dir / "elite.onnx" if onnx_dir else None
    teacher = teacher_dir / "teacher.pt" if teacher_dir else None
    elite = elite if elite and elite.exists() else None
    teacher = teacher if teacher and teacher.exists() else None
    if elite or teacher:
        from ops.celldiv.onnx import register_trained_players

        register_trained_players(elite_onnx=elite, teacher_ckpt=teacher, teacher_simulations=teacher_simulations,
                                 teacher_search=teacher_search)
        found.update({k: v for k, v in (("elite", elite), ("teacher", teacher)) if v})
    return found
