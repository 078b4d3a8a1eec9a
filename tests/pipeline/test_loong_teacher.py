"""The teacher asset: its check match against the plain network (expert-0 with the published int8 network) in one
tracked run, the check result blocking, published only on a pass; a missing network or a bad config fails in one
line."""

import json
from pathlib import Path

import pytest
import torch

from assets.loong_teacher import loong_teacher
from bot.int8_expert import quantize, save
from gpu.loong_expert_net import LoongExpertNet


def publish_network(resources) -> Path:
    """A random int8 network published as the latest loong_network_int8 (the plain network the teacher must beat)."""
    torch.manual_seed(3)
    net = quantize(LoongExpertNet("v1t2c16", mode="fake").eval())
    store = resources["artifact_store"].store()
    out = store.dir("loong", "loong_network_int8", "test-net")
    save(net, out / "network.npz")
    store.publish("loong", "loong_network_int8", "test-net")
    return out


def test_the_teacher_check_plays_the_plain_network_in_one_tracked_run(resources, tmp_path, tracked_runs,
                                                                       materialise, one_torch_thread, gate_figures):
    publish_network(resources)
    result = materialise(loong_teacher, resources, tmp_path, {})
    meta = gate_figures(result, "loong_teacher")
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "teacher_beats_network"
    record = json.loads(Path(meta["path"].value).read_text())
    c = record["check"]
    assert c["wins"] + c["draws"] + c["losses"] == 2 and len(c["games"]) == 2 and c["decisions"] > 0
    assert check.passed == record["passed"] == (c["wilson95"][0] > c["pass_lower"])  # two games never pass
    assert not check.passed and meta["published"].value.startswith("nothing: loong_teacher keeps its last")
    assert not result.success  # a failed blocking check fails the step: the targets never run on this teacher
    assert resources["artifact_store"].store().latest("loong", "loong_teacher") is None
    assert record["network"] == "test-net" and record["config"]["check_games"] == 2
    runs = [r for r in tracked_runs(resources) if r.info.run_name == "loong_teacher"]
    assert len(runs) == 1 and runs[0].data.params["network"] == "test-net"
    assert runs[0].data.metrics["check/decisions"] == c["decisions"]


@pytest.mark.parametrize("config,line", [
    ({"check_games": 3}, "loong_teacher: teacher config: check_games must be even and >= 2, got 3"),
    ({"model": "smart"}, "loong_teacher: teacher config: model: 'smart' is not one of"),
    ({"units": 0}, "loong_teacher: teacher config: units: must be an integer >= 1, got 0"),
])
def test_a_bad_teacher_config_fails_in_one_line(resources, tmp_path, config, line, materialise, failure_line):
    publish_network(resources)
    result = materialise(loong_teacher, resources, tmp_path, config)
    assert not result.success and failure_line(result).startswith(line)


def test_no_network_fails_in_one_line(resources, tmp_path, materialise, failure_line):
    result = materialise(loong_teacher, resources, tmp_path, {})
    assert not result.success
    assert failure_line(result) == ("loong_teacher: no published loong_network_int8 (the plain network to beat); "
                                    "materialise it first")
