"""Every test here runs the batched simulator with one torch thread (``one_torch_thread``, tests/conftest.py)."""

import pytest


@pytest.fixture(autouse=True)
def _one_torch_thread(one_torch_thread):
    yield
