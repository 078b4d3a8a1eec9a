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


def elo_metadata(ratings) -> dict:
    """Every player's Elo as its own number (``elo/<player>``), so Dagster plots it over materialisations."""
    return {f"elo/{r.player}": dg.MetadataValue.float(float(r.elo)) for r in ratings}


def validated(asset: str, check, *args):
    """``check(*args)`` with a config error (a ValueError naming the field) turned into one clear
    ``dg.Failure`` line naming the asset. Call it before opening the MLflow run."""
    try:
        return check(*args)
    except ValueError as e:
        raise dg.Failure(description=f"{asset}: {e}", allow_retries=False) from None
