"""Turning results into Dagster metadata: tables, embedded pictures, Elo numbers, the MLflow run link; and the
names both games' assets give their versions and work folders."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path

import dagster as dg


def version_id(context: dg.AssetExecutionContext) -> str:
    """A materialisation's version: the time it started and its run's id (``20261207T191159-b184c9f6``)."""
    return time.strftime("%Y%m%dT%H%M%S") + "-" + context.run_id[:8]


def config_key(config) -> str:
    """A short stable hash of a frozen dataclass config: the work folder's name."""
    blob = json.dumps(dataclasses.asdict(config), sort_keys=True, default=str).encode()
    return "cfg-" + hashlib.blake2b(blob, digest_size=6).hexdigest()


def inputs_key(config, *inputs: str) -> str:
    """A short stable hash of a frozen dataclass config and the names of an asset's inputs: the folder of a
    materialisation that resumes. The same inputs give the same folder, so a step run again after a stop finds the
    work it left there (the targets' finished games, the student's last checkpoint)."""
    blob = json.dumps([dataclasses.asdict(config), *inputs], sort_keys=True, default=str).encode()
    return "in-" + hashlib.blake2b(blob, digest_size=6).hexdigest()


def markdown_table(rows: Sequence[dict], columns: Sequence[str], fmt: dict | None = None) -> str:
    fmt = fmt or {}
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = "".join(
        "| " + " | ".join(fmt.get(c, "{}").format(r[c]) for c in columns) + " |\n" for r in rows
    )
    return head + body


def png_markdown(path: Path, alt: str) -> dg.MetadataValue:
    """The picture itself in the asset's metadata (the UI renders markdown images)."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return dg.MetadataValue.md(f"![{alt}](data:image/png;base64,{data})")


def run_metadata(tracker, mlflow) -> dict:
    """The MLflow run: its id, the store, and a link to its page in the MLflow UI."""
    return {
        "mlflow_run": dg.MetadataValue.url(tracker.url(mlflow.ui())),
        "mlflow_run_id": dg.MetadataValue.text(tracker.run_id or ""),
        "mlflow_tracking_uri": dg.MetadataValue.text(mlflow.uri()),
    }


RATE_DIGITS = 3  # score rates and Wilson bounds in metadata: 0.537
ELO_DIGITS = 1  # Elo ratings and differences in metadata: +412.3


def rate_value(x: float) -> dg.MetadataValue:
    """A score rate or a Wilson bound as metadata, rounded to ``RATE_DIGITS``."""
    return dg.MetadataValue.float(round(float(x), RATE_DIGITS))


def elo_value(x: float) -> dg.MetadataValue:
    """An Elo rating or difference as metadata, rounded to ``ELO_DIGITS``."""
    return dg.MetadataValue.float(round(float(x), ELO_DIGITS))


def elo_metadata(ratings) -> dict:
    """Every player's Elo as its own number (``elo/<player>``, rounded), so Dagster plots it over materialisations."""
    return {f"elo/{r.player}": elo_value(r.elo) for r in ratings}


def rounded(doc, digits: int = RATE_DIGITS):
    """``doc`` (JSON-like: dicts, lists, numbers) with every float rounded to ``digits``, for a JSON metadata value."""
    if isinstance(doc, float):
        return round(doc, digits)
    if isinstance(doc, dict):
        return {k: rounded(v, digits) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [rounded(v, digits) for v in doc]
    return doc


def build_label(root: Path, player: str) -> str:
    """How a table shows a ``build:<ref>`` player: the build's name and its id's first 8 digits (``foil-c
    (3f2a1b2c)``); empty for anything else, or a build the store cannot find."""
    if not player.startswith("build:"):
        return ""
    ref = player.removeprefix("build:")
    from bot.builds import load

    try:
        b = load(Path(root), ref.split("@", 1)[0] if "@" in ref else ref)
    except ValueError:
        return ""
    if "@" in ref:  # a snapshot of a name: the prefix says which registration
        return ref.replace("@", " (") + ")"
    return f"{b.name or 'unnamed'} ({b.id[:8]})"


def validated(asset: str, check, *args):
    """``check(*args)`` with a config error (a ValueError naming the field) turned into one clear
    ``dg.Failure`` line naming the asset. Call it before opening the MLflow run."""
    try:
        return check(*args)
    except ValueError as e:
        raise dg.Failure(description=f"{asset}: {e}", allow_retries=False) from None
