"""Shared by every test folder. The batched simulator runs on CPU here: Triton kernels in interpreter mode
(set before anything imports triton's jit; an explicit TRITON_INTERPRET wins). ``one_torch_thread``: the CI
box has 2 shared cores, where tiny torch ops with 2 OpenMP threads are several times slower; the folders
that run the simulator use it for every test (tests/gpu, tests/conformance)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402


@pytest.fixture
def one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


CLEAN_CHILD = "ARENA_TEST_CLEAN_CHILD"


@pytest.fixture
def in_a_clean_process(request) -> bool:
    """For the Ctrl-C tests: True when this test runs in a child pytest started with SIGINT at its default (the
    caller then runs its body). Otherwise this runs the test node in such a child, asserts it passed and returns
    False. A long-lived test worker can end up with SIGINT ignored at the C level (set by a native library of an
    earlier test; unidentified), which a Ctrl-C test there, and every process it starts, inherits."""
    import signal
    import subprocess
    import sys

    if os.environ.get(CLEAN_CHILD) == "1":
        return True
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                        request.node.nodeid], cwd=request.config.rootpath, capture_output=True, text=True,
                       timeout=600, env={**os.environ, CLEAN_CHILD: "1"},
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-2000:])
    return False


@pytest.fixture(scope="session")
def random_and_foil_builds(tmp_path_factory):
    """A builds root holding the random and foil C bots, registered as ``random-c`` and ``foil-c`` (compiled once a
    test worker; read-only for the tests that use it)."""
    from pathlib import Path

    from bot.builds import build_from_source

    repo = Path(__file__).resolve().parents[1]
    root = tmp_path_factory.mktemp("random-and-foil") / "builds"
    build_from_source(root, [repo / "bot/c/random_bot.c"], name="random-c")
    build_from_source(root, [repo / "bot/c/foil.c"], name="foil-c")
    return root
