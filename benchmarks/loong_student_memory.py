"""The student's memory for its targets: decoded in memory against spilled to disk and memory-mapped (issue 37).

    .venv/bin/python benchmarks/loong_student_memory.py [--targets DIR] [--copies 16] [--games 2] [--rounds 500]

Without ``--targets`` it first plays real teacher targets (``ops.loong.teacher_targets.run``, the small profile's
teacher and rules: ``--games`` games of ``--rounds`` rounds on 20 x 20, a random v1t2c16 int8 network as the
student, one process). The shards are then repeated ``--copies`` times (links, one folder) for the volume, and each
reader runs in a fresh process on the same folder: ``read_targets(spill=None)`` (every array in memory) and
``read_targets(spill=DIR)`` (what ``ops.loong.student.run`` does). Printed per reader: decisions, candidate records,
the decoded arrays' bytes, the peak of the process's anonymous memory (RssAnon sampled every 20 ms: what the
kernel cannot drop, so what an out-of-memory kill counts; a memory-mapped file's pages are not in it), the peak
resident set (VmHWM, file pages included) and the wall time. Both readers give the same arrays (tested in
tests/ops/test_loong_student.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _status(field: str) -> int:
    """A /proc/self/status memory field in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _read(targets: str, spill: str | None) -> dict:
    """One reader in this process: figures as a dict."""
    import dataclasses

    import numpy as np

    from ops.loong.student import read_targets

    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _status("RssAnon"))
            time.sleep(0.02)

    base = _status("RssAnon")
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    data = read_targets(targets, spill=spill)
    seconds = time.perf_counter() - t0
    done.set()
    thread.join()
    peak[0] = max(peak[0], _status("RssAnon"))
    nbytes = sum(a.nbytes for f in dataclasses.fields(data) if isinstance(a := getattr(data, f.name), np.ndarray))
    return {"decisions": len(data), "records": int(len(data.taps)), "decoded_bytes": int(nbytes),
            "peak_anon_bytes": peak[0] - base, "peak_rss_bytes": _status("VmHWM"), "seconds": seconds}


def _play(folder: Path, games: int, rounds: int) -> Path:
    """Real targets of the small profile's teacher over a random network: the folder of shards."""
    import torch

    from bot.int8_expert import quantize, save
    from gpu.loong_expert_net import LoongExpertNet
    from ops.loong.teacher_targets import profile_config, run

    torch.manual_seed(3)
    net = quantize(LoongExpertNet("v1t2c16", mode="fake").eval())
    save(net, folder / "network.npz")
    cfg = profile_config("small", games=games, sizes=(20,), max_rounds=rounds, replays=False, pages=False)
    out = folder / "targets"
    r = run(cfg, folder / "network.npz", out)
    print(f"targets: {r.decisions} decisions in {games} games of {rounds} rounds", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", help="a folder of targets shards (default: play them first)")
    ap.add_argument("--copies", type=int, default=16, help="times the shards are repeated for the volume")
    ap.add_argument("--games", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--reader", nargs=2, metavar=("TARGETS", "SPILL"), help=argparse.SUPPRESS)  # one reader's run
    args = ap.parse_args(argv)
    if args.reader:
        targets, spill = args.reader
        print(json.dumps(_read(targets, None if spill == "-" else spill)))
        return 0
    with tempfile.TemporaryDirectory(prefix="student-memory-") as tmp:
        tmp = Path(tmp)
        source = Path(args.targets) if args.targets else _play(tmp, args.games, args.rounds)
        shards = sorted(source.glob("part-*.parquet")) if source.is_dir() else [source]
        volume = tmp / "volume"
        volume.mkdir()
        for c in range(args.copies):
            for i, shard in enumerate(shards):
                (volume / f"part-{c:03d}{i:05d}.parquet").symlink_to(shard.resolve())
        rows = []
        for name, spill in (("in memory", "-"), ("spilled, memory-mapped", str(tmp / "spill"))):
            out = subprocess.run([sys.executable, __file__, "--reader", str(volume), spill], capture_output=True,
                                 text=True, cwd=ROOT)
            if out.returncode:
                print(f"{name}: failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append((name, r))
        print(f"\n{len(shards)} shard(s) x {args.copies} copies")
        print("| reader | decisions | records | decoded arrays | peak anonymous memory | peak resident (file pages "
              "too) | wall |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        gib = 1024 ** 3
        for name, r in rows:
            print(f"| {name} | {r['decisions']:,} | {r['records']:,} | {r['decoded_bytes'] / gib:.2f} GiB | "
                  f"{r['peak_anon_bytes'] / gib:.2f} GiB | {r['peak_rss_bytes'] / gib:.2f} GiB | "
                  f"{r['seconds']:.1f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
