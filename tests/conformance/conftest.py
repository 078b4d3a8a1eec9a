"""The conformance suite runs the batched simulator on CPU: Triton in interpreter mode (set before anything
imports triton's jit; an explicit TRITON_INTERPRET wins) and one torch thread (as tests/gpu/conftest.py)."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
