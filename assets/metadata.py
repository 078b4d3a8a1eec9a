"""Turning results into Dagster metadata: tables, embedded pictures, the MLflow run."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path

import dagster as dg


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


def run_metadata(tracker, tracking_uri: str) -> dict:
    return {
        "mlflow_run_id": dg.MetadataValue.text(tracker.run_id or ""),
        "mlflow_tracking_uri": dg.MetadataValue.text(tracking_uri),
    }
