"""The search's calibration (judge points per work unit), its simulations a turn, and the searching bot's points a
turn in the judge (docs/expert-core-search.md, "Figures").

    .venv/bin/python benchmarks/core_search.py [--games 64x64,32x32,16x16] [--every 2] [--judged 20x20,64x64]
                                               [--rounds 40] [--network NET.npz]

1. Calibration: the recorded games of tests/bot/core/conftest.py (the reference engine, 60 rounds) through the wasm32
   search harness (tests/bot/core/c/search_harness.c: the belief, the candidates and the search, no network; the
   scores a stand-in) in a Store of the judge's Engine (bot.judge.make_engine: 1 point an operator). Per searched
   dragon-turn (every `--every`-th), the points of one search at the judge build's budget (CORE_SEARCH_UNITS) over
   the units it counted: mean / p99 / max, the units and simulations a turn, the points of the world model's build
   (with one sample) and of a simulation.
2. The searching bot (expert-0-search, the wasm build with the search on at CORE_SEARCH_UNITS) in the judge against
   the foil, one game on each `--judged` map: points of the whole turn mean / p99 / p99.99 / max; the same games
   played by the native build (decisions identical) give the simulations and units a turn. The network is a
   random v1t4c32 (points do not depend on the weights), or `--network`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.expert_h_match import metered_points  # noqa: E402
from benchmarks.metered import Metered  # noqa: E402

HARNESS = ROOT / "tests" / "bot" / "core" / "c" / "search_harness.c"
HARNESS_EXPORTS = ("sh_obs_buffer", "sh_scores", "sh_records", "sh_summary_buffer", "sh_stats_buffer",
                   "sh_body_buffer", "sh_count", "sh_reset", "sh_turn", "sh_search_run", "sh_sample", "sh_body")


def harness_sources() -> list[Path]:
    from bot.native import CORE_DIR

    return [HARNESS, *(CORE_DIR / f for f in ("inputs.c", "planes.c", "candidates.c", "filters.c", "spawns.c",
                                               "symmetry.c", "relay.c", "sonar.c", "world.c", "sim.c", "search.c"))]


def build_harness_wasm(cache: Path | None = None) -> Path:
    from bot.native import build_test_wasm

    return build_test_wasm(harness_sources(), "search-harness", HARNESS_EXPORTS, cache=cache)


def pct(values, q: float) -> float:
    return float(np.percentile(np.asarray(values, np.float64), 100 * q)) if len(values) else 0.0


def calibrate(rows: list[str], every: int, units: int) -> None:
    from tests.bot.core.conftest import GAMES, record_game

    wasm = build_harness_wasm()
    for spec in rows:
        w, h = (int(v) for v in spec.split("x"))
        game = next((g for g in GAMES if g[:2] == (w, h)), None)
        if game is None:
            raise SystemExit(f"--games: no recorded game of {w}x{h} in conftest.GAMES")
        tracks = record_game(*game)[1]
        ratio, sims, used, search, model, model_units = [], [], [], [], [], []
        for t in tracks.values():
            m = Metered(wasm, "sh_obs_buffer")
            m.call("sh_reset", units, 4)
            for j, obs in enumerate(t.obs):
                m.put(obs)
                code, _ = m.call("sh_turn", len(obs))
                assert code == 0
                if j % every:
                    continue
                _, points = m.call("sh_search_run", 7, 0, 4)
                at = m.ex["sh_summary_buffer"](m.store)
                head = np.frombuffer(bytes(m.mem.read(m.store, at, at + 44)), "<u4")
                if head[2] == 0:  # no simulation: nothing to compare (one candidate), not a calibration point
                    continue
                ratio.append(points / head[1])
                sims.append(int(head[2]))
                used.append(int(head[1]))
                search.append(points)
                model.append(m.call("sh_sample", 7, 0, 0)[1])  # the world model and one sample, no simulation
                model_units.append(int(np.frombuffer(bytes(m.mem.read(m.store, at + 4, at + 8)), "<u4")[0]))
        print(f"{spec} {game[2]} {game[3]} v {game[4]}: {len(ratio)} searched dragon-turns at {units:,} units; "
              f"points a unit mean / p99 / max {np.mean(ratio):.0f} / {pct(ratio, 0.99):.0f} / {max(ratio):.0f}; "
              f"units used mean {np.mean(used):,.0f}; simulations a turn mean / min / max {np.mean(sims):.1f} / "
              f"{min(sims)} / {max(sims)}; points a search mean / max {np.mean(search) / 1e6:.2f}M / "
              f"{max(search) / 1e6:.2f}M, of which the world model (and one sample) mean / max "
              f"{np.mean(model) / 1e6:.2f}M / {max(model) / 1e6:.2f}M "
              f"({np.mean(model) / np.mean(model_units):.0f} a unit); points a simulation mean "
              f"{np.mean([(a - b) / n for a, b, n in zip(search, model, sims, strict=True)]):,.0f} "
              f"({(np.sum(search) - np.sum(model)) / (np.sum(used) - np.sum(model_units)):.0f} a unit)")


def judged(maps: list[str], rounds: int, network: str) -> None:
    import torch

    from bot.expert0 import SEARCH_UNITS, compile_expert0, expert0_factory
    from bot.int8_expert import load, quantize
    from bot.judge import default_judge, play_judged_game
    from games.loong.bots import play_game
    from games.loong.foil import foil_bot
    from games.loong.mapgen import generate_map
    from gpu.loong_expert_net import LoongExpertNet

    if network:
        net = load(network)
    else:
        torch.manual_seed(0)
        net = quantize(LoongExpertNet("v1t4c32", mode="fake").eval())
    with tempfile.TemporaryDirectory() as tmp:
        wasm = compile_expert0(net, Path(tmp) / "expert-0-search.wasm", search=True).wasm.read_bytes()
    factory = default_judge().factory(wasm, name="expert-0-search")
    native = expert0_factory(net, search_units=SEARCH_UNITS)
    every: list[int] = []
    for spec in maps:
        w, h = (int(v) for v in spec.split("x"))
        m = generate_map(w, h, "rot", seed=3)
        r = play_judged_game(m, factory, foil_bot, 11, rounds)
        pts = metered_points(r)
        every += pts
        searched: list = []
        nat = play_game(m, _recording(native, searched), foil_bot, 11, rounds)
        same = [t.action for t in nat.turns] == [t.action for t in r.turns]
        sims = [s.simulations for s in searched if s.simulations]
        units = [s.units for s in searched if s.simulations]
        print(f"judged {spec} rot, {rounds} rounds, expert-0-search v foil: {len(pts)} turns; points a turn mean "
              f"{statistics.mean(pts) / 1e6:.2f}M, p99 {pct(pts, 0.99) / 1e6:.2f}M, p99.99 "
              f"{pct(pts, 0.9999) / 1e6:.2f}M, max {max(pts) / 1e6:.2f}M; native decisions identical: {same}; "
              f"simulations a turn mean / min / max {np.mean(sims):.1f} / {min(sims)} / {max(sims)}; units a turn "
              f"mean {np.mean(units):,.0f} of {SEARCH_UNITS:,}")
    print(f"judged, every turn: {len(every)} turns; points a turn mean {statistics.mean(every) / 1e6:.2f}M, p99 "
          f"{pct(every, 0.99) / 1e6:.2f}M, p99.99 {pct(every, 0.9999) / 1e6:.2f}M, max {max(every) / 1e6:.2f}M")


def _recording(factory, out: list):
    """A factory whose bots append their search result to ``out`` after every turn."""

    class Recording:
        def __init__(self, bot) -> None:
            self.bot = bot

        def act(self, obs):
            a = self.bot.act(obs)
            out.append(self.bot.search())
            return a

    return lambda i, team, seed: Recording(factory(i, team, seed))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", default="64x64,32x32,16x16", help="calibration: WxH rows of conftest.GAMES")
    ap.add_argument("--every", type=int, default=2, help="calibration: search every k-th turn of a dragon")
    ap.add_argument("--judged", default="20x20,64x64", help="maps of the judged games (WxH, generated rot)")
    ap.add_argument("--rounds", type=int, default=40, help="rounds of each judged game")
    ap.add_argument("--network", default="", help="an int8 network (.npz) for the judged games; default random")
    a = ap.parse_args()
    if a.every < 1 or a.rounds < 1:
        ap.error("--every and --rounds must be >= 1")
    from bot.expert0 import SEARCH_UNITS

    if a.games:
        calibrate(a.games.split(","), a.every, SEARCH_UNITS)
    if a.judged:
        judged(a.judged.split(","), a.rounds, a.network)


if __name__ == "__main__":
    main()
