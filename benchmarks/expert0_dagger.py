"""DAgger rounds for expert-0 (issue 11, the strength bar; docs/loong-dataset.md, "Labelled datasets"): expert-0 plays,
expert-h labels every position it reaches, the labels join expert-h's own decisions and the network is fine-tuned
from the last kickstart, then exported and checked against its wasm build.

    .venv/bin/python benchmarks/expert0_train.py --out DIR                       # the kickstart (round 0)
    .venv/bin/python benchmarks/expert0_dagger.py --out DIR [--iterations 1] [--games 60] [--epochs 2] [--lr 5e-4]
    .venv/bin/python benchmarks/expert0_match.py --network DIR/dagger-1/network/network.npz

Imitation alone trains on expert-h's positions; expert-0 then drifts into positions expert-h never reached and has
no target there (compounding error: Ross, Gordon and Bagnell, 2011). Each round here: expert-0 (the last round's
network, registered as a build under DIR/builds and played through its native twin) plays --games games against
expert-h and the foil (ops.loong.dataset with ``labeller="expert-h"``: a shadow expert-h per expert-0 dragon labels
its positions), the rows are added to DIR/rows (expert-h's own decisions of expert0_train's dataset first, rebuilt
here when missing: the same config, the same bytes), game ids offset by round so no game is split across the
held-out line, and the network is fine-tuned on the whole aggregate (--epochs float epochs at --lr, starting from
the last kickstart.pt). Writes DIR/dagger-<round>/{dataset,kickstart,network}. --lr and --epochs are placeholders,
not tuned; no round's strength is recorded yet.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.expert0_train import pairings as base_pairings  # noqa: E402
from benchmarks.expert0_train import same_config  # noqa: E402
from ops.execution import PoolExecutor  # noqa: E402
from ops.loong.dataset import DatasetConfig, build, load_dataset  # noqa: E402

LABELLER = "expert-h"  # the default labeller (--labeller: teacher, the native privileged teacher)
GAME_OFFSET = 1_000_000  # round r's game g is game r * GAME_OFFSET + g in DIR/rows


def built(cfg: DatasetConfig, folder: Path, what: str, workers: int) -> None:
    """The dataset of ``cfg`` in ``folder``: kept when its config.json is this config's (the same bytes), else
    built."""
    if same_config(cfg, folder):
        print(f"{what}: kept {folder} (the same config)", flush=True)
        return
    ds = build(cfg, folder, executor=PoolExecutor(workers), progress=_progress(what))
    print(f"{what}:", ds.summary(), flush=True)


def base_rows(out: Path, games: int, rounds: int, workers: int, keep: int, labeller: str = LABELLER) -> Path:
    """DIR/rows/part-000000.parquet: the labeller's decisions of expert0_train's dataset (``--imitate`` the
    labeller: DIR/dataset when its config is this one, else rebuilt in DIR/base), of the games g with g mod 5 <
    ``keep`` (memory: 306K decisions did not fit 24 GiB in training; 222K did)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = out / "rows" / "part-000000.parquet"
    cfg = DatasetConfig(games=games, rounds=rounds, shard_games=5, seed=7, pairings=base_pairings(labeller))
    folder = out / "dataset" if same_config(cfg, out / "dataset") else out / "base"
    built(cfg, folder, "base dataset", workers)
    table = load_dataset(folder)
    mask = (np.array(table["bot"].to_pylist()) == labeller) & (table["game"].to_numpy() % 5 < keep)
    mine = table.filter(pa.array(mask))
    rows.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(mine, rows)
    print(f"base rows: {mine.num_rows} {labeller} decisions of games g mod 5 < {keep}", flush=True)
    return rows


def _progress(what: str):
    return lambda name, done, total: print(f"{what}: {name} done, {done}/{total}", flush=True)


def dagger_round(out: Path, r: int, network: Path, kickstart: Path, a) -> tuple[Path, Path]:
    """One round: (the fine-tuned kickstart.pt, its int8 network.npz)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from bot.expert0 import build_expert0
    from bot.int8_expert import load
    from ops.loong.kickstart import KickstartConfig, run
    from ops.loong.network import export

    here = out / f"dagger-{r}"
    b = build_expert0(out / "builds", load(network))
    me = f"build:{b.id}"
    rival = "expert-h" if a.labeller.startswith("teacher") else a.labeller  # a privileged labeller is no rival
    pairings = ((me, rival), (me, "foil"), (me, rival))
    cfg = DatasetConfig(games=a.games, rounds=a.rounds, shard_games=5, seed=100 + r, pairings=pairings,
                        builds=str(out / "builds"), labeller=a.labeller)
    t0 = time.time()
    built(cfg, here / "dataset", f"round {r} dataset", a.workers)
    table = load_dataset(here / "dataset")
    played = table.filter(pc.equal(table["played_by"], me))
    print(f"round {r} dataset: {played.num_rows} of {table.num_rows} labelled positions are expert-0's, "
          f"{time.time() - t0:.0f} s", flush=True)
    game = table.schema.get_field_index("game")
    table = table.set_column(game, "game", pa.array(table["game"].to_numpy() + np.int32(r * GAME_OFFSET), pa.int32()))
    pq.write_table(table.filter(pc.equal(table["bot"], a.labeller)), out / "rows" / f"part-{r:06d}.parquet")
    del table, played  # memory: the training reads the rows again
    k = run(KickstartConfig(shape=a.shape, epochs=a.epochs, quantised_epochs=0, batch_size=128, learning_rate=a.lr,
                            holdout=0.1, seed=0, threads=1, init=str(kickstart)),
            out / "rows", here / "kickstart", None, lambda line: print(line, flush=True))
    print(f"round {r} held out:", k.heldout["scalars"], flush=True)
    e = export(k.network, here / "network", progress=lambda line: print(line, flush=True))
    print(f"round {r} network {e.version[:16]} ({e.shape}): bot check {e.check['decisions']} decisions, "
          f"{e.check['mismatch_count']} mismatches, {e.check['inputs_differ']} input differences", flush=True)
    if e.check["mismatch_count"] or not e.check["decisions"]:
        raise SystemExit(f"round {r}: the exported network's bot check failed")
    return k.network, here / "network" / "network.npz"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="expert0_train.py's --out (its kickstart and network)")
    ap.add_argument("--iterations", type=int, default=1, help="DAgger rounds")
    ap.add_argument("--games", type=int, default=60, help="expert-0's labelled games a round")
    ap.add_argument("--base-games", type=int, default=150, help="expert0_train.py's --games (the base rows)")
    ap.add_argument("--base-keep", type=int, default=3, choices=range(1, 6),
                    help="the base games kept: g mod 5 < this (memory)")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=2, help="fine-tuning float epochs a round (placeholder)")
    ap.add_argument("--lr", type=float, default=5e-4, help="fine-tuning learning rate (placeholder)")
    ap.add_argument("--shape", default="v1t2c16")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--labeller", default=LABELLER, help="the bot whose choices label expert-0's positions (and "
                                                         "whose own decisions are the base rows): expert-h or "
                                                         "teacher[:UNITS[:MODEL]] (expert0_train.py --imitate)")
    a = ap.parse_args(argv)
    if a.iterations < 1 or a.games < 1 or a.epochs < 1:
        ap.error("--iterations, --games and --epochs must be at least 1")
    kickstart, network = a.out / "kickstart" / "kickstart.pt", a.out / "network" / "network.npz"
    for f in (kickstart, network):
        if not f.is_file():
            ap.error(f"{f}: missing (run benchmarks/expert0_train.py --out {a.out} first)")
    t0 = time.time()
    base_rows(a.out, a.base_games, a.rounds, a.workers, a.base_keep, a.labeller)
    for r in range(1, a.iterations + 1):
        kickstart, network = dagger_round(a.out, r, network, kickstart, a)
    print(f"DAgger: {a.iterations} round(s), network {network}; {time.time() - t0:.0f} s in all", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
