"""The cycle's value-lost report (issue 12 item 5; docs/loong-value-lost.md): every departure of the student from
the teacher in the published targets, its value lost and its one cause (candidate, information, ranking; untested
where the information test was off), candidate gaps by situation and generator, each generator's choice rates,
variant loss and cost in judge points, and the departures that cost the most (the review's entry points), each
linked to its game's viewer page in the report folder's ``pages/`` when the targets hold the games' replays."""

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import dagster as dg
from pydantic import Field

from assets.loong_teacher import GROUP, TARGETS, network_source
from assets.metadata import png_markdown, run_metadata, validated, version_id
from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource
from ops.profiles import Profiles, given

REPORT = "loong_value_lost_report"


@dataclass(frozen=True)
class ReportSettings:
    """The report's settings; the generators' points are measured on recorded games (board side, rounds, games)."""

    top: int = 20
    points_size: int = 20
    points_rounds: int = 30
    points_games: int = 1
    seed: int = 0


POINTS_PROFILES = Profiles("value-lost report", ReportSettings, {
    "test": dict(points_size=12, points_rounds=8), "small": {}, "full": dict(points_size=64, points_rounds=60,
                                                                             points_games=2)})


class ValueLostAssetConfig(dg.Config):
    top: int = Field(default=20, description="departures in top_departures.json, the costliest first")
    points_games: int | None = Field(default=None, description="recorded games of the generators' points (0: not "
                                                               "measured); None: the profile's (1, full 2)")
    points_size: int | None = Field(default=None, description="their board side; None: the profile's (test 12, "
                                                              "small 20, full 64)")
    points_rounds: int | None = Field(default=None, description="their rounds; None: the profile's (test 8, small "
                                                                "30, full 60)")
    seed: int = Field(default=0, description="the recorded games' seed")


def _settings(config: ValueLostAssetConfig, profile: str) -> dict:
    from ops.loong.value_lost import ReportError

    s = asdict(POINTS_PROFILES.resolve(profile, **given(
        top=config.top, points_size=config.points_size, points_rounds=config.points_rounds,
        points_games=config.points_games, seed=config.seed)))
    if s["top"] < 1:
        raise ReportError(f"top: must be >= 1, got {s['top']}")
    if s["points_games"] < 0:
        raise ReportError(f"points_games: must be >= 0 (0: not measured), got {s['points_games']}")
    if s["seed"] < 0:
        raise ReportError(f"seed: must be >= 0, got {s['seed']}")
    if not 10 <= s["points_size"] <= 64 or s["points_rounds"] < 1:
        raise ReportError(f"points_size {s['points_size']} / points_rounds {s['points_rounds']}: need a side of "
                          "10..64 and rounds >= 1")
    return s


def _metrics(doc: dict) -> dict[str, float]:
    m = {"decisions": doc["decisions"], "departures": doc["departures"], "departure_rate": doc["departure_rate"],
         "value_lost/total": doc["value_lost"]["total"], "noise/full_disagrees": doc["noise"]["share"]}
    for c, t in doc["causes"].items():
        m |= {f"value_lost/{c}": t["value_lost"], f"departures/{c}": t["count"],
              f"share_of_value_lost/{c}": t["share_of_value_lost"]}
    for k in ("teammate_knew", "beyond_any_teammate", "team_untested"):
        m[f"information/{k}/value_lost"] = doc["information"][k]["value_lost"]
    for name, g in doc["generators"].items():
        m |= {f"generator/{name}/student_rate": g["student_rate"], f"generator/{name}/teacher_rate": g["teacher_rate"],
              f"generator/{name}/variant_value_lost": g["variants"]["value_lost"]}
        if g["points"]:
            m |= {f"generator/{name}/points_median": g["points"]["median"],
                  f"generator/{name}/points_p99": g["points"]["p99"]}
    return {k: v for k, v in m.items() if v is not None}


@dg.asset(group_name=GROUP, kinds={"python", "mlflow"}, deps=[TARGETS])
def loong_value_lost_report(context: dg.AssetExecutionContext, config: ValueLostAssetConfig, mlflow: MlflowResource,
                            artifact_store: ArtifactStoreResource, profile: ProfileResource) -> dg.MaterializeResult:
    """Value lost by cause over the published targets' departures, candidate gaps by situation and generator, the
    generators' rates, variant loss and points, and the costliest departures: report.json, report.md, a picture and
    top_departures.json, one MLflow run tagged with the cycle."""
    from ops.loong.teacher_targets import load_targets
    from ops.loong.value_lost import COLUMNS, FILES, PAGES, ReportError, generator_points, write_report

    name = profile.checked()
    s = validated(REPORT, _settings, config, name)
    store = artifact_store.store()
    targets = store.latest(GROUP, TARGETS)
    if targets is None:
        raise dg.Failure(f"{REPORT}: no published loong_teacher_targets; materialise it first", allow_retries=False)
    try:
        tconf = json.loads((targets / "config.json").read_text())
        network = store.root / GROUP / "loong_network_int8" / Path(tconf["network"]).parent.name
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise dg.Failure(f"{REPORT}: {targets / 'config.json'}: no readable 'network' entry ({e})",
                         allow_retries=False) from None
    cycle = network_source(network)["cycle"] + 1  # the targets were searched for the student of this cycle
    table = validated(REPORT, load_targets, targets, COLUMNS)  # TargetsError: one line naming the file, column
    version = f"cycle{cycle}-{version_id(context)}"
    out = store.dir(GROUP, REPORT, version)
    with mlflow.run(context, GROUP, name, tags={"asset_family": "loong-cycle", "cycle": str(cycle)}) as tracker:
        tracker.log_params({**s, "targets": targets.name, "network": network.name, "cycle": cycle})
        try:
            points = (generator_points(s["points_size"], s["points_rounds"], s["points_games"], s["seed"])
                      if s["points_games"] else None)
            doc = write_report(table, out, top=s["top"], points=points, targets=targets)
        except ReportError as e:
            raise dg.Failure(f"{REPORT}: {e}", allow_retries=False) from None
        tracker.log_metrics(_metrics(doc))
        for f in FILES:
            tracker.log_artifact(out / f)
        pages = sorted((out / PAGES).glob("*.html"))
        for page in pages:  # beside report.md as in the folder, so its links resolve among the artifacts too
            tracker.log_artifact(page, artifact_path=PAGES)
        meta = run_metadata(tracker, mlflow)
    store.publish(GROUP, REPORT, version)
    causes = doc["causes"]
    context.log.info(f"{REPORT}: {doc['departures']} departures of {doc['decisions']} decisions, value lost "
                     f"{doc['value_lost']['total']:.3f}: " + ", ".join(f"{c} {t['value_lost']:.3f} ({t['count']})"
                                                                       for c, t in causes.items()))
    meta.update({
        "path": dg.MetadataValue.path(str(out)),
        "targets": dg.MetadataValue.path(str(targets)),
        "cycle": dg.MetadataValue.int(cycle),
        "decisions": dg.MetadataValue.int(doc["decisions"]),
        "departures": dg.MetadataValue.int(doc["departures"]),
        "value_lost": dg.MetadataValue.float(doc["value_lost"]["total"]),
        **{f"value_lost/{c}": dg.MetadataValue.float(t["value_lost"]) for c, t in causes.items()},
        **{f"departures/{c}": dg.MetadataValue.int(t["count"]) for c, t in causes.items()},
        "report": dg.MetadataValue.md((out / "report.md").read_text()),
        "picture": png_markdown(out / "value_lost.png", "value lost by cause"),
        "top_departures": dg.MetadataValue.path(str(out / "top_departures.json")),
        "pages": dg.MetadataValue.int(len(pages)),
    })
    top = json.loads((out / "top_departures.json").read_text())
    if top and top[0].get("page"):  # the costliest decision: its page, and a link opening it at the decision
        page, query = top[0]["page"].split("?", 1)
        meta["top_departure_page"] = dg.MetadataValue.path(str(out / page))
        meta["top_departure_link"] = dg.MetadataValue.url(f"{(out / page).as_uri()}?{query}")
    return dg.MaterializeResult(metadata=meta)


__all__ = ["POINTS_PROFILES", "REPORT", "ValueLostAssetConfig", "loong_value_lost_report"]
