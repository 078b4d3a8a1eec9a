"""The expert-0 network of docs/benchmarks.md, from nothing (issue 11): a replay dataset of expert-h's games, its
expert-h decisions alone, the kickstart (imitation), the int8 export and the bot check.

    .venv/bin/python benchmarks/expert0_train.py --out DIR [--games 150] [--rounds 200] [--epochs 4] [--workers 2]
    .venv/bin/python benchmarks/expert0_match.py --network DIR/network/network.npz

``--imitate teacher``: the native privileged teacher's own games and decisions instead of expert-h's.
Writes DIR/dataset (Parquet shards), DIR/imitated (the imitated bot's rows), DIR/kickstart (the checkpoint) and
DIR/network/network.npz (bot.int8_expert.save). About 2.5 min for the dataset on 2 workers and 4-6 min an epoch on
this 2-core machine (a 146K-decision dataset, 107K of them expert-h's).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ops.execution import PoolExecutor  # noqa: E402
from ops.loong.dataset import DatasetConfig, build  # noqa: E402
from ops.loong.kickstart import KickstartConfig, run  # noqa: E402
from ops.loong.mimic import bot_decisions  # noqa: E402
from ops.loong.network import export  # noqa: E402

# expert-h against itself twice as often as against the foil: most decisions are expert-h's
PAIRINGS = (("expert-h", "expert-h"), ("expert-h", "foil"), ("expert-h", "expert-h"))


def same_config(cfg: DatasetConfig, folder: Path) -> bool:
    """Whether ``folder`` holds the dataset of ``cfg`` (its config.json, the builds' ids aside): kept, not rebuilt."""
    import json
    from dataclasses import asdict

    doc = folder / "config.json"
    if not doc.exists():
        return False
    have = json.loads(doc.read_text())
    have.pop("build_ids", None)
    return have == json.loads(json.dumps(asdict(cfg)))


def pairings(imitate: str) -> tuple[tuple[str, str], ...]:
    """``PAIRINGS`` with the imitated bot in expert-h's seats (``teacher``: the native privileged teacher's own
    games, issue 37 item 1)."""
    return tuple(tuple(imitate if b == "expert-h" else b for b in pair) for pair in PAIRINGS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--games", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=4, help="float epochs (the export quantises the last)")
    ap.add_argument("--quantised-epochs", type=int, default=0)
    ap.add_argument("--shape", default="v1t2c16")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--imitate", default="expert-h", help="the bot whose own games and decisions are imitated: "
                                                         "expert-h (default) or teacher[:UNITS[:MODEL]]")
    ap.add_argument("--keep", type=int, default=5, choices=range(1, 6),
                    help="train on the games g with g mod 5 < this (memory: 222K decisions fit 24 GiB, 306K did not)")
    a = ap.parse_args(argv)
    t0 = time.time()
    cfg = DatasetConfig(games=a.games, rounds=a.rounds, shard_games=5, seed=7, pairings=pairings(a.imitate))
    if same_config(cfg, a.out / "dataset"):
        print(f"dataset: kept {a.out / 'dataset'} (the same config)", flush=True)
    else:
        ds = build(cfg, a.out / "dataset", executor=PoolExecutor(a.workers),
                   progress=lambda name, done, total: print(f"dataset: {name} done, {done}/{total}", flush=True))
        print("dataset:", ds.summary(), f"{time.time() - t0:.0f} s", flush=True)
    rows, n = bot_decisions(a.out / "dataset", a.imitate, a.out / "imitated" / "part-000000.parquet", a.keep)
    print(f"{a.imitate} decisions: {n} (games g mod 5 < {a.keep})", flush=True)
    k = run(KickstartConfig(shape=a.shape, epochs=a.epochs, quantised_epochs=a.quantised_epochs, batch_size=128,
                            learning_rate=2e-3, holdout=0.1, seed=0, threads=1),
            rows.parent, a.out / "kickstart", None, lambda line: print(line, flush=True))
    print("held out:", k.heldout["scalars"], flush=True)
    r = export(k.network, a.out / "network", progress=lambda line: print(line, flush=True))
    print(f"network {r.version[:16]} ({r.shape}, {r.weights:,} weights): bot check {r.check['decisions']} decisions, "
          f"{r.check['mismatch_count']} mismatches, {r.check['inputs_differ']} input differences; "
          f"{time.time() - t0:.0f} s in all", flush=True)
    return 0 if r.check["mismatch_count"] == 0 and r.check["decisions"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
