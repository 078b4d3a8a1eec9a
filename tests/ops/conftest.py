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


@pytest.fixture(scope="module")
def expert_home(tmp_path_factory):
    """ARENA_HOME for the module: a tiny network's native expert-0 is compiled once into its cache, and the CLIs
    find it there."""
    with pytest.MonkeyPatch.context() as mp:
        d = tmp_path_factory.mktemp("arena-home")
        mp.setenv("ARENA_HOME", str(d))
        yield d


@pytest.fixture(scope="module")
def tiny_network(expert_home):
    """``(Int8ExpertNet, path)``: a random v1t2c16 network, weights widened so that its scores spread, saved under
    the module's ARENA_HOME."""
    from bot.int8_expert import quantize, save
    from gpu.loong_expert_net import LoongExpertNet

    torch.manual_seed(3)
    m = LoongExpertNet("v1t2c16", mode="fake")
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(2.0)
    net = quantize(m.eval())
    path = expert_home / "tiny.npz"
    save(net, path)
    return net, path


@pytest.fixture(scope="module")
def home(expert_home):
    """The module's ARENA_HOME under the name the review and targets tests use (a module may define its own)."""
    return expert_home


@pytest.fixture(scope="module")
def network(tiny_network):
    """``(Int8ExpertNet, path)`` of the tiny network (a module may define its own)."""
    return tiny_network
