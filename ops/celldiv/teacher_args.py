"""The Cell Division teacher command's options, shared by ``arena celldiv teacher`` (``ops/celldiv/cli.py``) and
``python -m ops.celldiv.teacher`` (``ops/celldiv/teacher.py``); light, so the CLI parser imports no torch."""

from __future__ import annotations

import argparse
from pathlib import Path

from ops.cli_common import add_execution_args


def add_teacher_arguments(ap: argparse.ArgumentParser) -> None:
    """The teacher command's options (``arena celldiv teacher`` and ``python -m ops.celldiv.teacher``)."""
    ap.add_argument("--profile", default="small", help="config profile: test, small or full (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=Path(".arena/celldiv/teacher"),
                    help="work folder: checkpoint.pt, teacher.pt (default: %(default)s)")
    ap.add_argument("--data", type=Path, help="teacher-data Parquet path (default: OUT/teacher_data.parquet)")
    ap.add_argument("--skip-data", action="store_true", help="train only; write no teacher data")
    ap.add_argument("--kickstart", type=Path,
                    help="switching-linear weight JSON the teacher imitates first (default: the bundled one)")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                    help="override config fields, e.g. iterations=2 (default: the profile's values)")
    add_execution_args(ap)
