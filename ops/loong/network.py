"""The kickstarted expert network as the bot runs it (issue 11, item 6): exported to the int8 format, compiled into
expert-0, and checked decision by decision against the torch network in its quantised mode.

    r = export(network_pt, out_dir, progress=print)      # network.npz (bot.int8_expert.save) + the bot check
    r.version, r.check                                   # the digest; decisions, candidates, mismatches
    check_bot(model, net, CHECK_GAMES)                   # the check alone: expert-0's native build on recorded games

The check plays recorded games (ops.loong.dataset.play_recorded: the reference engine), feeds every dragon's
observations to expert-0's native build (bot/core/expert0.c: inputs, the generated network, the choice) and to the
dataset's input function (bot/core/inputs.h), runs the torch network (fake-quantised, float64: exact) on those
inputs, and compares: the value and every candidate's score as integers, and the chosen candidate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ops.loong.dataset import play_recorded

# (side, symmetry, team 0 bot, team 1 bot, seed, rounds): short games of the dataset's bots, fixed here.
CHECK_GAMES = ((20, "rot", "expert-h", "foil", 11, 40), (24, "lr", "foil", "expert-h", 12, 30))


class NetworkError(ValueError):
    """A network file or setting that cannot be exported; the message names it."""


@dataclass
class ExportResult:
    network: Path  # network.npz
    version: str  # the integer network's digest
    shape: str
    weights: int
    check: dict = field(default_factory=dict)
    wall_seconds: float = 0.0


def torch_decision(model, turn) -> tuple[int, np.ndarray]:
    """The torch network (its current mode) on one turn's inputs (bot.core_inputs.TurnInputs): (value, scores) as
    the integer network's raw numbers (real * 2**exponent; exact in fake mode), scores int64 [n] with candidates
    that have no tap at INT32_MIN."""
    import torch

    from bot.core_inputs import NO_TAP

    sh = model.shape
    crop = np.frombuffer(turn.crop, np.uint8).reshape(sh.crop, sh.crop, sh.crop_channels).transpose(2, 0, 1)
    ov = np.frombuffer(turn.overview, np.uint8).reshape(sh.overview, sh.overview, sh.overview_channels)
    taps = np.frombuffer(turn.taps, np.uint8).astype(np.int64)
    mask = taps != NO_TAP
    feats = np.frombuffer(turn.features, np.uint8).reshape(-1, sh.features)
    def t(a, dt=torch.float64):
        return torch.as_tensor(np.array(a), dtype=dt)[None]  # a writable copy, batch of one

    with torch.no_grad():
        value, logits = model(t(crop), t(ov.transpose(2, 0, 1)), t(np.frombuffer(turn.scalars, np.uint8)),
                              t(feats), t(np.where(mask, taps, 0), torch.int64), t(mask, torch.bool))
    e = model.exponents()
    v = value[0].double().item() * 2.0 ** e["value_exp"]
    s = logits[0].double().numpy() * 2.0 ** e["score_exp"]
    scores = np.where(mask, np.round(s), np.iinfo(np.int32).min).astype(np.int64)
    return int(round(v)), scores


def check_bot(model, net, games=CHECK_GAMES, *, cache: Path | None = None, use_cache: bool = True,
              progress: Callable[[str], None] | None = None) -> dict:
    """expert-0's native build against the torch network on every decision of ``games``: counts and the first
    mismatches (an empty ``mismatches`` list is the pass)."""
    from bot.abi import parse_reply
    from bot.core_inputs import NativeInputs, inputs_library
    from bot.expert0 import Expert0, expert0_library
    from bot.team_keys import load_secret

    secret = load_secret()
    lib, ilib = expert0_library(net, secret.value, cache), inputs_library(cache=cache)
    model = model.eval()
    decisions = candidates = turns_refused = inputs_differ = 0
    mismatches: list[str] = []
    for gi, (side, symmetry, a, b, seed, rounds) in enumerate(games):
        turns, _, _ = play_recorded(side, symmetry, a, b, seed, rounds)
        for dragon in sorted(turns):
            bot, inputs = Expert0(lib, dragon, 0, seed, use_cache), NativeInputs(ilib, secret.words())
            for turn in turns[dragon]:
                raw, steps = bot.reply_bytes(turn.obs)
                recorded = inputs.turn(turn.obs)
                if recorded is None or bot.last_code != 0:
                    turns_refused += 1
                    continue
                inputs.sent(parse_reply(raw, lambda ptr, n, s=steps: s[:n])[1])  # the bot's own frames, as the dataset
                own = bot.inputs()
                where = f"game {gi} dragon {dragon} round {turn.round}"
                if not own.same(recorded):  # the dataset's function on the same observations must see the bot's bytes
                    inputs_differ += 1
                    mismatches.append(f"{where}: the dataset's inputs differ from the bot's")
                chosen, value, scores = bot.decision()
                tv, ts = torch_decision(model, own)
                decisions += 1
                candidates += len(ts)
                if value != tv:
                    mismatches.append(f"{where}: value {value} (C) != {tv} (torch)")
                if len(scores) != len(ts) or np.any(scores != ts):
                    bad = int(np.flatnonzero(scores != ts)[0]) if len(scores) == len(ts) else -1
                    mismatches.append(f"{where}: scores differ (first at candidate {bad})")
                pick = int(np.argmax(ts)) if len(ts) and ts.max() > np.iinfo(np.int32).min else -1
                if chosen != pick:
                    mismatches.append(f"{where}: chose {chosen} (C), torch's top is {pick}")
        if progress:
            progress(f"bot check: game {gi + 1}/{len(games)}, {decisions} decisions, {len(mismatches)} mismatches")
    return {"games": len(games), "decisions": decisions, "candidates": candidates, "refused": turns_refused,
            "inputs_differ": inputs_differ,
            "mismatches": mismatches[:20], "mismatch_count": len(mismatches)}


def export(network_pt: str | Path, out_dir: str | Path, *, games=CHECK_GAMES, cache: Path | None = None,
           progress: Callable[[str], None] | None = None) -> ExportResult:
    """The kickstart checkpoint ``network_pt`` quantised (fake mode's integers) to ``out_dir/network.npz``, the C
    generated and compiled natively, and the bot check run on ``games``."""
    from bot.int8_expert import digest, quantize, save
    from ops.loong.kickstart import KickstartError, load_network

    t0 = time.time()
    try:
        model, _ = load_network(network_pt)
    except KickstartError as e:
        raise NetworkError(str(e)) from None
    model.mode = "fake"
    net = quantize(model)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "network.npz"
    save(net, path)
    check = check_bot(model, net, games, cache=cache, progress=progress)
    return ExportResult(path, digest(net), net.shape.name, net.weight_count(), check, time.time() - t0)
