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
