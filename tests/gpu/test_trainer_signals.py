"""A Lightning fit through ``make_trainer``, and Ray started and stopped by ops/execution.py, leave native
fatal-signal handlers alone: wasmtime catches a wasm trap
(SIGILL) and an out-of-bounds access (SIGSEGV) in its own handlers, which Lightning's signal connector would reset
to SIG_DFL when a fit ends, so a hostile bot's trap after any training in the same process would kill it. Run in a
child process: the failure is a crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import lightning as L, torch, wasmtime
from torch.utils.data import DataLoader, TensorDataset
from bot.judge import default_judge
from games.loong.bots import play_game, random_bot
from games.loong.mapgen import generate_map
from gpu.training import make_trainer

def bot(act):
    return wasmtime.wat2wasm('(module (memory (export "memory") 1) (func (export "init") (param i32 i32)) '
                             '(func (export "obs_buffer") (param i32) (result i32) i32.const 1024) '
                             '(func (export "act") (param i32) (result i32) ' + act + '))')

m = generate_map(12, 12, "lr", seed=1)
judge = default_judge()
traps = {"trap": "unreachable", "oob": "i32.const 70000 i32.load"}
for name, act in traps.items():  # the judge's handlers are in place: each bot loses, the process lives
    assert play_game(m, judge.factory(bot(act), name=name), random_bot, 1, 6).winner == 1

class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(2, 1)
    def training_step(self, batch, i):
        return self.w(batch[0]).pow(2).mean()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

data = DataLoader(TensorDataset(torch.ones(4, 2)), batch_size=2)
make_trainer(max_epochs=1, validate=False).fit(Tiny(), train_dataloaders=data)
for name, act in traps.items():  # after the fit: still caught
    assert play_game(m, judge.factory(bot(act), name=name + "-2"), random_bot, 2, 6).winner == 1
print("alive")
"""


def test_a_wasm_trap_after_a_fit_is_still_caught():
    r = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("alive"), (r.returncode, r.stderr[-2000:])


CHILD_RAY = r"""
import wasmtime
from bot.judge import default_judge
from games.loong.bots import play_game, random_bot
from games.loong.mapgen import generate_map
from ops.execution import make_executor, shutdown_ray

bot = wasmtime.wat2wasm('(module (memory (export "memory") 1) (func (export "init") (param i32 i32)) '
                        '(func (export "obs_buffer") (param i32) (result i32) i32.const 1024) '
                        '(func (export "act") (param i32) (result i32) unreachable))')
m = generate_map(12, 12, "lr", seed=1)
judge = default_judge()
assert play_game(m, judge.factory(bot, name="trap"), random_bot, 1, 6).winner == 1
make_executor("ray", workers=1).connect()
assert play_game(m, judge.factory(bot, name="trap"), random_bot, 2, 6).winner == 1  # Ray running
shutdown_ray()
assert play_game(m, judge.factory(bot, name="trap"), random_bot, 3, 6).winner == 1  # and after it stopped
print("alive")
"""


def test_a_wasm_trap_while_and_after_ray_runs_is_still_caught():
    import os
    import shutil
    import tempfile

    home = tempfile.mkdtemp(prefix="arena-", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    try:
        r = subprocess.run([sys.executable, "-c", CHILD_RAY], cwd=REPO, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "ARENA_HOME": home})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert r.returncode == 0 and r.stdout.strip().endswith("alive"), (r.returncode, r.stderr[-2000:])
