"""Elite move latency through onnxruntime: the whole ``EliteOnnxPlayer.choose`` (encode, one
session run, mask, argmax) and the bare session run, one board at a time. The seed's target is
under 1 ms per move on a phone.

    .venv/bin/python benchmarks/celldiv_elite.py --onnx .arena/.../elite_cnn.onnx
    .venv/bin/python benchmarks/celldiv_elite.py          # exports a random-weight b3c32 first
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from games.celldiv.encoding import encode
from gpu.celldiv_nets import SmallPolicyNet
from ops.celldiv.distill import STUDENT_KIND
from ops.celldiv.onnx import INPUT, OUTPUT, EliteOnnxPlayer, export_onnx, sample_positions
from ops.checkpoints import model_version, save_checkpoint

TARGET_MS = 1.0


def random_student_onnx(folder: Path) -> Path:
    torch.manual_seed(0)
    net = SmallPolicyNet("b3c32")
    version = model_version(net, "b3c32", 0)
    doc = {"kind": STUDENT_KIND, "shape": "b3c32", "model": net.state_dict(), "version": version}
    ckpt = save_checkpoint(folder / "student.pt", doc)
    return export_onnx(ckpt, folder / "elite_cnn.onnx")


def timings_ms(fn, items, warmup: int) -> np.ndarray:
    for x in items[:warmup]:
        fn(x)
    out = np.empty(len(items))
    for i, x in enumerate(items):
        t0 = time.perf_counter()
        fn(x)
        out[i] = (time.perf_counter() - t0) * 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--onnx", type=Path, help="elite_cnn.onnx (default: a random-weight student)")
    ap.add_argument("--positions", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=100)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = a.onnx or random_student_onnx(Path(tmp))
        player = EliteOnnxPlayer(path)
        states = sample_positions(a.positions, seed=3)
        boards = [encode(s)[None] for s in states]
        move = timings_ms(player.choose, states, a.warmup)
        bare = timings_ms(lambda x: player.session.run([OUTPUT], {INPUT: x}), boards, a.warmup)
    print(f"Elite through onnxruntime ({path if a.onnx else 'random-weight b3c32'}), {a.positions} positions "
          f"of sizes 4-8, one at a time, 1 thread")
    for name, t in (("choose (encode+run+mask)", move), ("session.run only", bare)):
        print(f"  {name:26s} median {np.median(t):.3f} ms  p99 {np.quantile(t, 0.99):.3f} ms  "
              f"mean {t.mean():.3f} ms")
    verdict = "under" if np.median(move) < TARGET_MS else "OVER"
    print(f"  median move {np.median(move):.3f} ms is {verdict} the seed's {TARGET_MS} ms target "
          "(on this CPU, not a phone)")


if __name__ == "__main__":
    main()
