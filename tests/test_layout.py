"""The layout and its import contracts (pyproject.toml) cover every module they are about: ``ops/`` by game
(``ops/loong/``, ``ops/celldiv/``) on neutral modules directly under ``ops/``; the contract "No Loong module imports a
Cell Division one" lists assets/ and gpu/ modules by name (import-linter's wildcards replace whole module names only),
so a new loong* or celldiv* module there must be added to it, and a new module directly under ops/ to the neutral
modules' contract; this test fails until it is."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = "No Loong module imports a Cell Division one"
NEUTRAL = "The neutral ops modules import neither game's package"
INDEPENDENCE = "ops by game"


def _contract(prefix: str) -> dict:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in doc["tool"]["importlinter"]["contracts"] if c["name"].startswith(prefix)]
    return contract


def _modules(prefix: str) -> set[str]:
    return {f"{pkg}.{p.stem}" for pkg in ("assets", "gpu") for p in (ROOT / pkg).glob(f"{prefix}*.py")}


def test_ops_is_by_game_with_no_game_module_left_flat():
    assert (ROOT / "ops" / "loong" / "__init__.py").exists() and (ROOT / "ops" / "celldiv" / "__init__.py").exists()
    flat = [p.name for p in (ROOT / "ops").glob("*.py") if p.stem.startswith(("loong", "celldiv", "cli_loong"))]
    assert flat == [], f"game modules directly under ops/ (they belong in ops/loong/ or ops/celldiv/): {flat}"


def test_the_game_separation_contract_names_every_game_module():
    contract = _contract(CONTRACT)
    assert set(contract["source_modules"]) == _modules("loong") | {"ops.loong", "bot"}
    assert set(contract["forbidden_modules"]) == _modules("celldiv") | {"ops.celldiv", "games.celldiv"}
    assert set(_contract(INDEPENDENCE)["modules"]) == {"ops.loong", "ops.celldiv"}


def test_the_neutral_contract_names_every_module_directly_under_ops():
    contract = _contract(NEUTRAL)
    flat = {f"ops.{p.stem}" for p in (ROOT / "ops").glob("*.py") if p.stem != "__init__"}
    assert set(contract["source_modules"]) == flat
    assert {"ops.loong", "ops.celldiv"} <= set(contract["forbidden_modules"])


def _function_level_ops_imports(path: Path) -> list[str]:
    """The ``ops`` modules ``path`` imports inside a function: each must be a cost the caller defers (torch and the
    like), never a way around an import circle; ``test_no_import_circle_in_ops`` checks there is none."""
    tree = ast.parse(path.read_text())
    out = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ops":
                out.append(node.module if node.module != "ops" else f"ops.{node.names[0].name}")
    return out


def test_no_import_circle_in_ops():
    """No circle among ops modules, counting imports inside functions too (the old teacher/CLI circle is gone)."""
    modules = {}
    for p in (ROOT / "ops").rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(p.read_text())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ops"):
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("ops"))
        modules[name] = deps
    graph = {m: {d for d in deps if d in modules and d != m} for m, deps in modules.items()}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in graph[m]:
            if state.get(d) == 1:
                raise AssertionError("import circle: " + " -> ".join([*path[path.index(d):], d]))
            if d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert _function_level_ops_imports(ROOT / "ops" / "celldiv" / "teacher.py") == []
