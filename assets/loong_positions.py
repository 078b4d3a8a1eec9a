"""The reviewed-positions check (issue 13, item 5; docs/loong-positions.md): every new build of expert-0 (and any
bot named in the config) against the whole positions library, reported per position, with the asset check
``positions_regression``."""

import json
from pathlib import Path

import dagster as dg
from pydantic import Field

from assets.metadata import markdown_table, validated, version_id
from assets.resources import ArtifactStoreResource
from ops.loong import positions as op

GROUP = "loong"
EXPERT0 = "build:expert-0"
RESULTS = "positions.json"


class PositionChecksConfig(dg.Config):
    library: str = Field(default="", description="the positions library folder; empty: ARENA_HOME/loong/positions")
    bots: list[str] = Field(default=[], description="more bots to check: build:<name|id> or Python bots")
    expert0: bool = Field(default=True, description="check build:expert-0 when it is registered")


def _previous(store) -> dict[tuple[str, str], bool]:
    """(bot, position) -> passed, from the last published check (empty when there is none)."""
    latest = store.latest(GROUP, "loong_position_checks")
    if latest is None or not (latest / RESULTS).exists():
        return {}
    doc = json.loads((latest / RESULTS).read_text())
    return {(v["bot"], v["position"]): v["passed"] for v in doc.get("verdicts", [])}


@dg.asset(
    group_name=GROUP, deps=["loong_wasm_build"], kinds={"python", "wasm"},
    check_specs=[dg.AssetCheckSpec("positions_regression", asset="loong_position_checks",
                                   description="every checked bot plays the correct move (or an accepted one) on "
                                               "every position of the library; reported per position, not blocking: "
                                               "a library holds the positions the bots still get wrong")],
)
def loong_position_checks(context: dg.AssetExecutionContext, config: PositionChecksConfig,
                          artifact_store: ArtifactStoreResource) -> dg.MaterializeResult:
    """The registered expert-0 (and the config's bots) on every reviewed position: re-simulated from its replay,
    the dragon's earlier observations fed first, the bot's move against the correct one."""
    store = artifact_store.store()
    root = store.root / "loong" / "builds"
    library = Path(config.library) if config.library else op.default_library()
    positions = validated("loong_position_checks", op.load_library, library)
    names = list(dict.fromkeys(([EXPERT0] if config.expert0 and (root / "names" / "expert-0").exists() else [])
                               + list(config.bots)))
    notes = []
    if config.expert0 and EXPERT0 not in names:
        notes.append("expert-0 is not registered (no loong_network_int8 published): not checked")
    factories = validated("loong_position_checks", lambda: op.resolve_bots(names, builds=str(root))) if names else {}
    verdicts = validated("loong_position_checks", op.check_library, library, factories, positions)
    s = op.summary(verdicts, len(positions))
    if not positions:
        notes.append(f"empty library ({library}): 0 positions checked")
    before = _previous(store)
    newly_failing = [f"{v.bot}: {v.position}" for v in verdicts if not v.passed and before.get((v.bot, v.position))]
    for n in notes:
        context.log.info(f"loong_position_checks: {n}")
    version = version_id(context)
    out = store.dir(GROUP, "loong_position_checks", version)
    doc = {"library": str(library), "bots": names, **s, "newly_failing": newly_failing, "notes": notes,
           "verdicts": [v.as_dict() for v in verdicts]}
    (out / RESULTS).write_text(json.dumps(doc, indent=2))
    store.publish(GROUP, "loong_position_checks", version)
    rows = [{**v.as_dict(), "result": "pass" if v.passed else "FAIL", "correct": " or ".join(v.correct)}
            for v in verdicts]
    meta = {
        "positions": dg.MetadataValue.int(len(positions)),
        "library": dg.MetadataValue.path(str(library)),
        "bots": dg.MetadataValue.json(names),
        "by_bot": dg.MetadataValue.json(s["by_bot"]),
        "verdicts": dg.MetadataValue.md(markdown_table(
            rows, ["bot", "position", "result", "move", "correct", "played", "reason"]) if rows else
            "no positions checked"),
        "notes": dg.MetadataValue.json(notes),
        "path": dg.MetadataValue.path(str(out)),
    }
    check = dg.AssetCheckResult(
        check_name="positions_regression", passed=s["passed"], severity=dg.AssetCheckSeverity.WARN,
        metadata={"positions": len(positions), "failed": dg.MetadataValue.json(s["failed"]),
                  "newly_failing": dg.MetadataValue.json(newly_failing), "notes": dg.MetadataValue.json(notes)})
    return dg.MaterializeResult(metadata=meta, check_results=[check])
