"""The layout's import contract covers every module it is about: the import-linter contract "No Loong module
imports a Cell Division one" (pyproject.toml) lists modules by name (import-linter's wildcards replace whole module
names only), so a new loong* or celldiv* module must be added there; this test fails until it is."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = "No Loong module imports a Cell Division one"


def _modules(prefix: str) -> set[str]:
    return {f"{pkg}.{p.stem}" for pkg in ("ops", "assets", "gpu") for p in (ROOT / pkg).glob(f"{prefix}*.py")}


def test_the_game_separation_contract_names_every_game_module():
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in doc["tool"]["importlinter"]["contracts"] if c["name"].startswith(CONTRACT)]
    assert set(contract["source_modules"]) == _modules("loong") | {"bot"}
    assert set(contract["forbidden_modules"]) == _modules("celldiv") | {"games.celldiv"}
