"""Fixtures shared by the ops tests."""

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """One thread per test process: the CPU is shared (pytest -n 2), and oversubscribed threads
    make small forward passes many times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
