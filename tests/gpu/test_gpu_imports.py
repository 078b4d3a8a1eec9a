"""The gpu package imports without cycles, and its Loong modules take the rule constants from games/loong."""

import re
from pathlib import Path

import grimp

GPU = Path(__file__).resolve().parents[2] / "gpu"
# Rule constants restated by value instead of imported from games.loong (one home for each).
RESTATED = {
    r"0x[Ff]{16}|\(1 << 64\) - 1|2 \*\* 64 - 1": "the 64-bit mask (games.loong.rng.MASK64)",
    r"\bWINDOW = |\bHALF = ": "the observation window (games.loong.observation.WINDOW, HALF)",
    r"\bMAX_TEAM = ": "the team cap (games.loong.actions.MAX_TEAM)",
    r"\+ 3\) // 4": "free steps (games.loong.actions.free_steps; gpu.loong_tables.free_steps_of on tensors)",
    r"ECHO_\w+(, ECHO_\w+)* = range\(|ECHO \+ 5": "the echo indices (games.loong.engine.ECHO_*, ECHO_COUNT)",
    r"0x9E3779B97F4A7C15": "splitmix64's increment (games.loong.rng.GOLDEN)",
    r"max_rounds: int = 500": "the round limit (games.loong.engine.MAX_ROUNDS)",
}


def test_gpu_modules_import_each_other_without_cycles():
    graph = grimp.build_graph("gpu", "games", include_external_packages=False)
    mods = sorted(m for m in graph.modules if m.startswith("gpu."))
    cycles = [(a, b) for i, a in enumerate(mods) for b in mods[i + 1:]
              if graph.find_shortest_chain(a, b) and graph.find_shortest_chain(b, a)]
    assert not cycles, f"import cycles in gpu/: {cycles}"


def test_loong_rule_constants_are_imported_not_restated():
    found = []
    for path in sorted(list(GPU.glob("loong_*.py")) + list((GPU / "kernels").glob("loong_*.py"))):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for pattern, what in RESTATED.items():
                if re.search(pattern, line):
                    found.append(f"{path.name}:{n}: {what}: {line.strip()}")
    assert not found, "\n".join(found)


def test_free_steps_of_tensors_is_the_rules_free_steps():
    import torch

    from games.loong.actions import free_steps
    from gpu.loong_tables import MAX_LENGTH, free_steps_of

    lengths = torch.arange(0, MAX_LENGTH + 1).view(-1, 1)
    assert free_steps_of(lengths).view(-1).tolist() == [free_steps(n) for n in range(MAX_LENGTH + 1)]
    assert free_steps_of(torch.tensor([-1, MAX_LENGTH + 5])).tolist() == [0, free_steps(MAX_LENGTH)]
