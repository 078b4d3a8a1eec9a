"""The parts of an equal-cost contender comparison both games share (docs/contenders.md): the config checks of the
bar, its statistic and the tolerance; the match verdict (score rate and Wilson 95%, the Elo difference with its 95%
interval, pass or fail on the bar); MLflow logging, a parent run and one child run a side under one ``comparison``
tag; the lines the CLIs print. Loong's builds are metered in ``ops/loong/contender.py``, Cell Division's players
timed in ``ops/celldiv/contender.py``. A neutral module: it imports neither game.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from games.gate import decisive_games
from games.stats import MatchTally, fit_elo, wilson_interval

STATISTICS = ("wilson_low", "score_rate")


class ContenderError(ValueError):
    """A comparison that cannot be run as configured; the message names the field and the value."""


class ContenderRefused(ContenderError):
    """Two builds whose costs differ beyond the tolerance; the message names both builds and both costs."""


def check_bar(bar: float, statistic: str, tolerance: float) -> None:
    """The checks both games' configs share: the bar, its statistic and the tolerance."""
    if not 0.0 < bar < 1.0:
        raise ContenderError(f"bar: must lie strictly between 0 and 1 (a score rate), got {bar}")
    if statistic not in STATISTICS:
        raise ContenderError(f"statistic: must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    if not (tolerance >= 0.0 and math.isfinite(tolerance)):
        raise ContenderError(f"tolerance: must be a finite number at least 0, got {tolerance}")


@dataclass(frozen=True)
class MatchVerdict:
    """A fixed match from the contender's side: score rate and Wilson 95%, Elo difference (contender minus
    current) with its 95% interval, and the verdict on the pass bar."""

    games: int
    wins: int
    draws: int
    losses: int
    score_rate: float
    wilson_low: float
    wilson_high: float
    elo_diff: float
    elo_low: float
    elo_high: float
    statistic: str
    value: float
    bar: float
    passed: bool

    @property
    def verdict(self) -> str:
        """'pass' on the bar; else 'inconclusive' while the Wilson interval still holds the bar (the match was too
        small to tell), 'fail' when it lies wholly below it."""
        if self.passed:
            return "pass"
        return "inconclusive" if self.wilson_low <= self.bar <= self.wilson_high else "fail"

    @property
    def decisive_games(self) -> int | None:
        """Inconclusive: the smallest match at this score rate whose interval would leave the bar (None otherwise,
        or when the rate is the bar itself)."""
        return decisive_games(self.score_rate, self.bar, self.games) if self.verdict == "inconclusive" else None

    def as_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict, "decisive_games": self.decisive_games}


def match_verdict(tally: MatchTally, statistic: str, bar: float) -> MatchVerdict:
    """The verdict of ``tally`` (contender = ``tally.a`` against current = ``tally.b``); Elo from the shared fit,
    anchored on the current player (one virtual draw keeps a sweep finite)."""
    lo, hi = wilson_interval(tally.score, tally.games)
    rating = next(r for r in fit_elo([tally], anchor=tally.b) if r.player == tally.a)
    value = lo if statistic == "wilson_low" else tally.score_rate
    return MatchVerdict(tally.games, tally.wins, tally.draws, tally.losses, tally.score_rate, lo, hi, rating.elo,
                        rating.low, rating.high, statistic, value, bar, value >= bar)


def comparison_id(current: str, contender: str) -> str:
    """The tag value both sides' runs share: readable names and a unique suffix."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in f"{contender}-vs-{current}")
    return f"{safe[:80]}-{uuid.uuid4().hex[:8]}"


def check_doc(comparison: str, verdict: MatchVerdict, warnings: list[str] | tuple[str, ...] = ()) -> dict:
    """The comparison's check as its ``check.json`` artifact says it: the bar, the statistic, the verdict, the
    figures and any warning."""
    return {"comparison": comparison, "check": "contender_passes", **verdict.as_dict(),
            "passes_when": f"{verdict.statistic} >= {verdict.bar:g}", "warnings": list(warnings)}


def match_artifacts(games: list[dict], check: dict) -> dict[str, str]:
    """The files a comparison attaches to its runs: ``games.jsonl`` (one match game a line) and ``check.json``."""
    import json

    return {"games.jsonl": "".join(json.dumps(g) + "\n" for g in games), "check.json": json.dumps(check, indent=1)}


def log_sides(parent, comparison: str, verdict: MatchVerdict, sides: Mapping[str, Mapping[str, Any]],
              shared_params: Mapping[str, Any], artifacts: Mapping[str, str] | None = None) -> dict[str, str]:
    """Under the open MLflow run ``parent`` (an ``ops.tracking.MlflowTracker``): the comparison's figures on the
    parent, and one child run a side (``sides``: role -> {name, metrics, params, tags}), every run tagged
    ``comparison``, each child with the same metric names so MLflow's compare view sets them side by side.
    ``artifacts`` (file name -> text: the match's games and its check) are attached to every one of the three runs.
    Returns role -> child run id."""
    import tempfile

    import mlflow

    from ops.tracking import MlflowTracker, git_commit

    folder = Path(tempfile.mkdtemp(prefix="contender-"))
    files = []
    for name, text in (artifacts or {}).items():
        (folder / name).write_text(text)
        files.append(folder / name)
    for f in files:
        parent.log_artifact(f)

    shared = {"comparison": comparison, "verdict": verdict.verdict}
    figures = {"elo_diff": verdict.elo_diff, "elo_diff_low": verdict.elo_low, "elo_diff_high": verdict.elo_high,
               "passed": float(verdict.passed), "bar": verdict.bar, "games": verdict.games}
    parent.set_tags({**shared, "role": "comparison", **{f"{role}": s["name"] for role, s in sides.items()}})
    parent.log_params({**shared_params, "statistic": verdict.statistic})
    parent.log_metrics({**figures, "contender_score_rate": verdict.score_rate,
                        "contender_wilson_low": verdict.wilson_low, "contender_wilson_high": verdict.wilson_high})
    runs: dict[str, str] = {}
    for role, side in sides.items():
        mine = verdict.score_rate if role == "contender" else 1.0 - verdict.score_rate
        lo, hi = (verdict.wilson_low, verdict.wilson_high) if role == "contender" else \
            (1.0 - verdict.wilson_high, 1.0 - verdict.wilson_low)
        elo = (verdict.elo_diff, verdict.elo_low, verdict.elo_high) if role == "contender" else (0.0, 0.0, 0.0)
        tags = {"git_commit": git_commit(), **shared, "role": role, "player": side["name"],
                **{k: str(v) for k, v in side.get("tags", {}).items()}}
        with mlflow.start_run(run_name=f"{role}: {side['name']}", nested=True, tags=tags,
                              parent_run_id=parent.run_id) as run:
            child = MlflowTracker(run)
            child.log_params({**shared_params, **side.get("params", {}), "role": role, "player": side["name"]})
            child.log_metrics({**figures, **side["metrics"], "score_rate": mine, "wilson_low": lo, "wilson_high": hi,
                               "elo": elo[0], "elo_low": elo[1], "elo_high": elo[2]})
            for f in files:
                child.log_artifact(f)
            runs[role] = child.run_id
    for f in files:
        f.unlink()
    folder.rmdir()
    return runs


def log_comparison(result, experiment: str, *, tracking_uri: str | None = None,
                   tags: Mapping[str, str] | None = None) -> dict[str, str]:
    """Open a parent run in ``experiment`` and log ``result`` (a Loong or Cell Division contender result) under
    it; returns {'parent': id, 'current': id, 'contender': id}. The CLI's way; assets open the parent themselves
    (``MlflowResource.run``) and call ``result.log(parent)``."""
    from ops.tracking import mlflow_run

    with mlflow_run(experiment, f"contender: {result.contender} vs {result.current}", tracking_uri=tracking_uri,
                    tags={"comparison": result.comparison, **dict(tags or {})}) as parent:
        runs = result.log(parent)
        return {"parent": parent.run_id, **runs}


def compare_link(runs: Mapping[str, str], tracking_uri: str | None = None) -> str:
    """The MLflow UI's compare view of a logged comparison's two sides (``runs`` as ``log_comparison`` returns)."""
    from mlflow import MlflowClient

    from ops.tracking import compare_url, default_tracking_uri, ui_base

    uri = tracking_uri or default_tracking_uri()
    experiment = MlflowClient(tracking_uri=uri).get_run(runs["parent"]).info.experiment_id
    return compare_url(ui_base(uri), experiment, [runs["current"], runs["contender"]])


def relative_gap(current: float, contender: float) -> float:
    """(contender - current) / current: how much more (or, negative, less) the contender costs."""
    return (contender - current) / current if current > 0 else (0.0 if contender == current else math.inf)


def summary_line(r) -> str:
    """One line of a finished comparison (both games)."""
    v = r.verdict
    return (f"{r.contender} vs {r.current}: {v.wins}-{v.draws}-{v.losses} of {v.games}, score rate "
            f"{v.score_rate:.3f} (Wilson 95% {v.wilson_low:.3f}-{v.wilson_high:.3f}), Elo {v.elo_diff:+.0f} "
            f"({v.elo_low:+.0f} .. {v.elo_high:+.0f}); bar {v.statistic} >= {v.bar:g}: {v.verdict.upper()}"
            + ("" if v.verdict != "inconclusive" else
               f" (the interval holds the bar: about {v.decisive_games:,} games at this rate would decide)"
               if v.decisive_games else " (the rate is the bar: no match size decides)"))


def report_lines(r) -> list[str]:
    """The comparison as the CLIs print it (both games): each side's cost, the match, the verdict."""
    if hasattr(r, "current_cost"):
        costs = [f"current   {r.current_cost.line()}", f"contender {r.contender_cost.line()}",
                 f"cost gap {r.cost_gap:+.1%} (tolerance {r.config.tolerance:.0%})"
                 + (f"; contender played at the current build's budget, {r.budget:,} points a turn "
                    f"({r.contender_cost.at_cap} of its {r.contender_cost.turns} metered turns ran out)"
                    if r.budget else "")]
        endings = ", ".join(f"{k} {v}" for k, v in sorted(r.reasons.items()))
        costs.append(f"endings: {endings or 'none'}")
    else:
        costs = [f"current   {r.current_latency.line()}", f"contender {r.contender_latency.line()}",
                 f"latency gap {r.latency_gap:+.1%} (tolerance {r.config.tolerance:.0%})"]
    warnings = [f"warning: {w}" for w in (r.warnings() if hasattr(r, "warnings") else [])]
    return [*costs, summary_line(r), *warnings, f"comparison tag: {r.comparison}"]


__all__ = ["STATISTICS", "ContenderError", "ContenderRefused", "MatchVerdict", "check_bar", "check_doc",
           "compare_link", "comparison_id", "log_comparison", "log_sides", "match_artifacts", "match_verdict",
           "relative_gap", "report_lines", "summary_line"]
