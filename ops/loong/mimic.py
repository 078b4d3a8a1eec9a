"""Mimics: networks trained to play like one bot of the pool, admitted to the league only after a fidelity check
(docs/loong-league.md).

    r = train(MimicConfig(bot="foil"), dataset_dir, out_dir, tracker)   # imitation of that bot's decisions only
    b = admit(r, builds_root)     # compiled into expert-0's C as 'mimic-foil' and registered, or None (refused)
    train(MimicConfig(bot="build:expert-1", games=12, builds=str(root)), dataset_dir, out_dir)   # 'mimic-expert-1'

The training is the kickstart's (``ops.loong.kickstart.run``) on the replay dataset's rows of that bot alone
(``bot_decisions``: a Parquet file of the same schema). A bot the dataset does not hold (a registered build) has
its own games recorded first (``record_games``: ``games`` games against the foil on the dataset's bands and round
limit, sides and symmetries in turn, seeded by the kickstart's seed). The fidelity is the network's top-1
agreement with the bot on the kickstart's held-out games (whole games; in the fake-quantised mode, whose integers
the compiled bot runs: ``loong_network_int8``'s bot_equals_torch check), over the decisions whose action was a
candidate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from games.loong.foil import registry
from ops.execution import Executor
from ops.loong import dataset as ds
from ops.loong import kickstart as kick
from ops.loong.dataset import DatasetError, load_dataset
from ops.loong.league import MIMIC_PREFIX
from ops.profiles import Profiles
from ops.tracking import Tracker

FIDELITY_THRESHOLD = 0.6
"""The least top-1 agreement a mimic needs on held-out games to play in the league. The mixed kickstart reaches 44%
on the small dataset (docs/benchmarks.md), and a network that agrees with a bot on fewer than 3 decisions in 5 plays
a different bot most of the time it matters: its results would rate it, not the bot it stands for."""
MIMIC_DATA = "decisions.parquet"
MIMIC_GAMES = "games"  # under the mimic's folder: the bot's own games, when the dataset does not hold it
FOIL = "foil"  # the opponent of a bot's recorded games


class MimicError(ValueError):
    """A mimic that cannot be trained or admitted; the message names the field or file."""


@dataclass(frozen=True)
class MimicConfig:
    bot: str  # the bot it imitates: a dataset bot ('foil', 'expert-h', 'random') or a build 'build:<name|id>'
    kickstart: kick.KickstartConfig = kick.KickstartConfig()  # the imitation's settings (quantised_epochs >= 1)
    games: int = 12  # games of the bot recorded against the foil when the dataset does not hold it
    builds: str = ""  # the builds root of a 'build:' bot; empty: the dataset's (its config.json), else ARENA_HOME's

    @property
    def name(self) -> str:
        """The mimic's build name: mimic-<bot>, mimic-<build name> ('build:expert-0@1a2b3c4d': mimic-expert-0.1a2b3c4d,
        '@' being no build-name character)."""
        return MIMIC_PREFIX + self.bot.removeprefix(ds.BUILD).replace("@", ".")


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
    recorded_games: int = 0  # the bot's own games recorded for it (0: the dataset held its decisions)

    @property
    def passed(self) -> bool:
        return self.decisions_heldout > 0 and self.agreement >= self.threshold

    def as_dict(self) -> dict:
        return {"bot": self.bot, "name": self.name, "version": self.version, "agreement": self.agreement,
                "threshold": self.threshold, "passed": self.passed, "decisions_train": self.decisions_train,
                "decisions_heldout": self.decisions_heldout, "recorded_games": self.recorded_games,
                "network": str(self.network)}


# a build's own games recorded against the foil (the dataset lacks them), by profile
CONFIG_PROFILES = Profiles("mimic", MimicConfig, {"test": dict(games=3), "small": dict(games=18),
                                                  "full": dict(games=600)}, MimicError)


def check_config(cfg: MimicConfig) -> None:
    """A bad setting raises MimicError (or KickstartError) naming the field; a build is not looked up here."""
    from bot.builds import _NAME

    kick.check_config(cfg.kickstart)
    if not cfg.bot or "/" in cfg.bot or cfg.bot == ds.BUILD:
        raise MimicError(f"bot: {cfg.bot!r} is not a bot name")
    if not _NAME.match(cfg.name):
        raise MimicError(f"bot: {cfg.bot!r} gives the mimic name {cfg.name!r}, not a valid build name")
    if cfg.games < 1:
        raise MimicError(f"games: must be at least 1, got {cfg.games}")
    if cfg.kickstart.quantised_epochs < 1:
        raise MimicError("quantised_epochs: a mimic plays its fake-quantised integers; need at least 1")
    if cfg.kickstart.holdout <= 0:
        raise MimicError(f"holdout: the fidelity check needs held-out games, got {cfg.kickstart.holdout}")


def bot_decisions(dataset: Path, bot: str, out: Path, keep: int = 5) -> tuple[Path, int]:
    """The dataset's decisions of ``bot`` alone, of the games g with g mod 5 < ``keep`` (5: every game; fewer bound
    the training's memory), written to ``out`` with the dataset's schema one shard at a time (a 312K-decision
    dataset read whole did not fit 24 GiB); (file, rows)."""
    dataset = Path(dataset)
    shards = sorted(dataset.glob("part-*.parquet")) if dataset.is_dir() else [dataset]
    bots: set[str] = set()
    rows = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    writer = None
    try:
        for shard in shards:
            table = load_dataset(shard)
            bots |= set(pc.unique(table["bot"]).to_pylist())
            games = table["game"].to_numpy()
            mask = pc.equal(table["bot"], bot).to_numpy(zero_copy_only=False) & (games % 5 < keep)
            mine = table.filter(pa.array(mask))
            if mine.num_rows:
                writer = writer or pq.ParquetWriter(tmp, mine.schema)
                writer.write_table(mine)
                rows += mine.num_rows
            del table, mine
    finally:
        if writer is not None:
            writer.close()
    if rows == 0:
        tmp.unlink(missing_ok=True)
        raise MimicError(f"bot: {bot!r} has no decisions in {dataset} (bots there: {', '.join(sorted(bots))})")
    tmp.replace(out)
    return out, rows


def dataset_bots(dataset: Path) -> set[str]:
    """The bots whose decisions ``dataset`` holds."""
    return set(pc.unique(load_dataset(Path(dataset), columns=["bot"])["bot"]).to_pylist())


def games_config(cfg: MimicConfig, dataset: Path) -> ds.DatasetConfig:
    """The dataset config of ``cfg.bot``'s own games: ``cfg.games`` against the foil on ``dataset``'s bands and
    round limit (its config.json), seeded by the kickstart's seed; checked (a missing build: MimicError)."""
    path = Path(dataset) / "config.json"
    try:
        doc = json.loads(path.read_text())
        bands, rounds, shard_games = tuple(int(b) for b in doc["bands"]), int(doc["rounds"]), int(doc["shard_games"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MimicError(f"{path}: no dataset config to take the bands and rounds of {cfg.bot}'s games from "
                         f"({type(e).__name__}: {e})") from None
    out = ds.DatasetConfig(games=cfg.games, rounds=rounds, shard_games=shard_games, seed=cfg.kickstart.seed,
                           bands=bands, pairings=((cfg.bot, FOIL),), builds=cfg.builds or doc.get("builds", ""))
    try:
        ds.check_config(out)
    except DatasetError as e:
        raise MimicError(f"mimic of {cfg.bot}: {e}") from None
    return out


def own_games(cfg: MimicConfig, dataset: Path) -> ds.DatasetConfig | None:
    """The config of ``cfg.bot``'s own games to record (``games_config``, checked) when ``dataset`` holds none of
    its decisions; None when it does, or when the bot is none to record (then ``bot_decisions`` refuses it)."""
    recordable = cfg.bot.startswith(ds.BUILD) or cfg.bot in {*registry(), "expert-h"}
    if not recordable or cfg.bot in dataset_bots(dataset):
        return None
    return games_config(cfg, dataset)


def record_games(cfg: MimicConfig, dataset: Path, out: Path, executor: Executor | None = None,
                 progress=None) -> ds.DatasetResult:
    """``cfg.bot``'s own games (``games_config``) recorded as a replay dataset under ``out``, a shard a work item
    on ``executor``."""
    return ds.build(games_config(cfg, dataset), out, executor=executor,
                    progress=(lambda name, k, n: progress(f"recorded {name} ({k}/{n})")) if progress else None)


def train(cfg: MimicConfig, dataset: Path, out_dir: Path, tracker: Tracker | None = None,
          progress=None, executor: Executor | None = None) -> MimicResult:
    """Imitate ``cfg.bot`` on its decisions in ``dataset`` (or, when it has none there, on its own games recorded
    under ``out_dir/games`` on ``executor``) into ``out_dir``, and measure its fidelity on held-out games."""
    check_config(cfg)
    out_dir = Path(out_dir)
    recorded = 0
    if own_games(cfg, dataset) is not None:
        games = record_games(cfg, dataset, out_dir / MIMIC_GAMES, executor, progress)
        dataset, recorded = games.out, cfg.games
        if progress:
            progress(f"{cfg.bot}: {games.by_bot.get(cfg.bot, {}).get('decisions', 0)} decisions in {cfg.games} games")
    data, _ = bot_decisions(dataset, cfg.bot, out_dir / MIMIC_DATA)
    try:
        r = kick.run(cfg.kickstart, data, out_dir, tracker, progress=progress)
    except (DatasetError, kick.KickstartError) as e:
        raise MimicError(f"mimic of {cfg.bot}: {e}") from None
    return MimicResult(cfg.bot, cfg.name, r.network, r.version, float(r.heldout["scalars"]["top1"]),
                       r.decisions_train, r.decisions_val, recorded_games=recorded)


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
