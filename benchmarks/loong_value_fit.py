"""Privileged value fit speed: samples a second of extraction (replays re-simulated in the batched simulator, full
planes quantised) by map size, and the small profile's whole run (record, extract, fit every horizon) with its
calibration figures.

    .venv/bin/python benchmarks/loong_value_fit.py [--profile small] [--seed 0] [--threads 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    args = ap.parse_args()
    import torch

    from ops.loong import value_fit as vf

    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = vf.profile_config(args.profile, seed=args.seed, threads=args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        t0 = time.perf_counter()
        paths = vf.record_games(cfg, out / "replays")
        t_record = time.perf_counter() - t0
        print(f"recorded {len(paths)} games in {t_record:.1f} s")
        by_size: dict[int, list[Path]] = {}
        for p, g in zip(paths, range(cfg.games)):
            by_size.setdefault(vf.game_spec(cfg, g)[0], []).append(p)
        for size, ps in sorted(by_size.items()):
            t0 = time.perf_counter()
            samples = vf.extract(ps, cfg.sample_every, cfg.lanes)
            dt = time.perf_counter() - t0
            n = sum(len(s) for s in samples)
            print(f"extract {size}x{size}: {len(ps)} games, {n} samples in {dt:.2f} s: {n / dt:.0f} samples/s")
        t0 = time.perf_counter()
        r = vf.run(cfg, out / "fit", replays=out / "replays")
        dt = time.perf_counter() - t0
        print(f"extract + fit of {r.games} games ({sum(r.samples.values())} samples): {dt:.1f} s; whole profile "
              f"with recording about {dt + t_record:.1f} s")
        for f in r.fits:
            print(f"  H={f['horizon']} lambda {f['lambda']:.2f}: epochs {f['epochs']} (best {f['best_epoch']}), "
                  f"calibration log loss {f['calibration_log_loss']:.4f} (constant {f['constant_log_loss']:.4f}), "
                  f"ECE {f['ece']:.4f}, passed {f['passed']}")
        print(r.verdict)


if __name__ == "__main__":
    main()
