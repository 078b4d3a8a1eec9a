"""Benchmark PPO self-play for the linear tiers on a profile (default ``small``), both models.

Prints, per model: wall time per iteration (self-play and update apart), the wall time and
iteration at which the periodic evaluation first came within ``converge_tol`` of its best, and
the final score rates against Medium and Hard with 95% Wilson intervals.

    .venv/bin/python benchmarks/celldiv_ppo.py [--profile small] [--models linear switching]
        [--out DIR] [--json FILE]

Each model trains from scratch in its own folder under ``--out`` (a leftover checkpoint there
would be resumed, so the default is a fresh temporary folder).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ops.celldiv.ppo import PROFILES, PPOResult, config_for, run  # noqa: E402


def _fmt(summary: dict) -> str:
    return (f"{summary['score_rate']:.3f} [{summary['wilson_low']:.3f}, {summary['wilson_high']:.3f}] "
            f"(W{summary['wins']} D{summary['draws']} L{summary['losses']}, "
            f"margin {summary['mean_margin']:+.1f})")


def report(result: PPOResult, wall: float) -> dict:
    h = result.history
    play = [x["selfplay_seconds"] for x in h]
    update = [x["update_seconds"] for x in h]
    print(f"\n== {result.model}: {result.iterations} iterations, {wall:.1f} s wall "
          f"(training {result.train_seconds:.1f} s incl. periodic evals)")
    print(f"  per iteration: {np.mean(play) + np.mean(update):.2f} s "
          f"(self-play {np.mean(play):.2f} s, update {np.mean(update):.3f} s; "
          f"{np.mean([x['samples'] for x in h]):.0f} samples)")
    print("  periodic eval (score rate vs the eval opponent): "
          + " ".join(f"{e['iteration']}:{e['score_rate']:.2f}" for e in result.evals))
    if result.converged_iteration is not None:
        tail = "; still improving at the end" if result.still_improving else ""
        print(f"  converged: iteration {result.converged_iteration} at "
              f"{result.converged_train_seconds:.1f} s of training (best {result.best_eval_score:.3f}{tail})")
    for key, summary in result.final_eval.items():
        print(f"  {key:<20} {_fmt(summary)}")
    print("  weights: " + json.dumps({k: [round(x, 2) for x in v] for k, v in result.weights.items()}))
    return {"wall_s": wall, "seconds_per_iteration": result.seconds_per_iteration, **{
        k: v for k, v in result.as_dict().items() if k not in ("history",)}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", choices=tuple(PROFILES), default="small")
    p.add_argument("--models", nargs="+", choices=["linear", "switching"], default=["linear", "switching"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = p.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="celldiv_ppo_bench_"))
    figures = {}
    for model in args.models:
        config = config_for(args.profile, model=model, seed=args.seed)
        t0 = time.perf_counter()
        result = run(config, out_dir=out / model)
        figures[model] = report(result, time.perf_counter() - t0)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
