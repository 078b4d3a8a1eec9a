"""Mimics: networks trained to play like one bot of the pool, admitted to the league only after a fidelity check
(docs/loong-league.md).

    r = train(MimicConfig(bot="foil"), dataset_dir, out_dir, tracker)   # imitation of that bot's decisions only
    b = admit(r, builds_root)     # compiled into expert-0's C as 'mimic-foil' and registered, or None (refused)

The training is the kickstart's (``ops.loong_kickstart.run``) on the replay dataset's rows of that bot alone
(``bot_decisions``: a Parquet file of the same schema). The fidelity is the network's top-1 agreement with the bot
on the kickstart's held-out games (whole games; in the fake-quantised mode, whose integers the compiled bot runs:
``loong_network_int8``'s bot_equals_torch check), over the decisions whose action was a candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from ops import loong_kickstart as kick
from ops.loong_dataset import DatasetError, load_dataset
from ops.loong_league import MIMIC_PREFIX
from ops.tracking import Tracker

FIDELITY_THRESHOLD = 0.6
"""The least top-1 agreement a mimic needs on held-out games to play in the league. The mixed kickstart reaches 44%
on the small dataset (docs/benchmarks.md), and a network that agrees with a bot on fewer than 3 decisions in 5 plays
a different bot most of the time it matters: its results would rate it, not the bot it stands for."""
MIMIC_DATA = "decisions.parquet"


class MimicError(ValueError):
    """A mimic that cannot be trained or admitted; the message names the field or file."""


@dataclass(frozen=True)
class MimicConfig:
    bot: str  # the dataset's bot whose decisions it imitates ('foil', 'expert-h', 'random')
    kickstart: kick.KickstartConfig = kick.KickstartConfig()  # the imitation's settings (quantised_epochs >= 1)

    @property
    def name(self) -> str:
        """The mimic's build name."""
        return MIMIC_PREFIX + self.bot


@dataclass
class MimicResult:
    bot: str
    name: str  # the build name it is registered under when admitted
    network: Path  # the kickstart checkpoint
    version: str
    agreement: float  # top-1 agreement with the bot on held-out games
    decisions_train: int
    decisions_heldout: int
    threshold: float = FIDELITY_THRESHOLD

    @property
    def passed(self) -> bool:
        return self.decisions_heldout > 0 and self.agreement >= self.threshold

    def as_dict(self) -> dict:
        return {"bot": self.bot, "name": self.name, "version": self.version, "agreement": self.agreement,
                "threshold": self.threshold, "passed": self.passed, "decisions_train": self.decisions_train,
                "decisions_heldout": self.decisions_heldout, "network": str(self.network)}


def check_config(cfg: MimicConfig) -> None:
    kick.check_config(cfg.kickstart)
    if not cfg.bot or "/" in cfg.bot:
        raise MimicError(f"bot: {cfg.bot!r} is not a bot name")
    if cfg.kickstart.quantised_epochs < 1:
        raise MimicError("quantised_epochs: a mimic plays its fake-quantised integers; need at least 1")
    if cfg.kickstart.holdout <= 0:
        raise MimicError(f"holdout: the fidelity check needs held-out games, got {cfg.kickstart.holdout}")


def bot_decisions(dataset: Path, bot: str, out: Path) -> tuple[Path, int]:
    """The dataset's decisions of ``bot`` alone, written to ``out`` with the dataset's schema; (file, rows)."""
    table = load_dataset(Path(dataset))
    bots = sorted(set(table["bot"].to_pylist()))
    mine = table.filter(pc.equal(table["bot"], bot))
    if mine.num_rows == 0:
        raise MimicError(f"bot: {bot!r} has no decisions in {dataset} (bots there: {', '.join(bots)})")
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(mine, out)
    return out, mine.num_rows


def train(cfg: MimicConfig, dataset: Path, out_dir: Path, tracker: Tracker | None = None,
          progress=None) -> MimicResult:
    """Imitate ``cfg.bot`` on its decisions in ``dataset`` into ``out_dir`` and measure its fidelity."""
    check_config(cfg)
    out_dir = Path(out_dir)
    data, _ = bot_decisions(dataset, cfg.bot, out_dir / MIMIC_DATA)
    try:
        r = kick.run(cfg.kickstart, data, out_dir, tracker, progress=progress)
    except (DatasetError, kick.KickstartError) as e:
        raise MimicError(f"mimic of {cfg.bot}: {e}") from None
    return MimicResult(cfg.bot, cfg.name, r.network, r.version, float(r.heldout["scalars"]["top1"]),
                       r.decisions_train, r.decisions_val)


def admit(result: MimicResult, builds_root: Path, threshold: float = FIDELITY_THRESHOLD):
    """Compile the mimic into expert-0's C and register it under its name when it passes its fidelity check
    (agreement >= ``threshold``); a mimic that fails is never compiled nor registered: returns None."""
    result = replace(result, threshold=threshold)
    if not result.passed:
        return None
    from bot.expert0 import build_expert0
    from bot.int8_expert import quantize

    model, _ = kick.load_network(result.network)
    model.mode = "fake"
    return build_expert0(Path(builds_root), quantize(model), name=result.name)
