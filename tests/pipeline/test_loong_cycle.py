"""One expert-iteration cycle at the test profile: the kickstart's int8 network (cycle 0) -> the teacher's targets
on its own games -> the student -> its gate against its parent -> loong_network_int8 exports the student (cycle 1)
only once the gate passed, each step one MLflow run tagged with its cycle. The teacher is published by hand here
(two check games can never pass the check's bar), and so is a passed gate after the real one ran."""

import json
from dataclasses import asdict
from pathlib import Path

import dagster as dg

from assets.loong import loong_kickstart_net, loong_network_int8, loong_replay_dataset
from assets.loong_search import CHECK_FILE
from assets.loong_teacher import TEACHER_FILE, loong_cycle_gate, loong_student, loong_teacher_targets
from assets.loong_value_lost import loong_value_lost_report
from assets.resources import ExecutionResource
from bot.int8_expert import digest
from bot.int8_expert import load as load_network
from ops.loong.teacher import teacher_config
from tests.pipeline.conftest import _gate_figures


def test_one_cycle_turns_the_network_into_the_next(resources, tmp_path, tracked_runs, one_torch_thread):
    resources = {**resources, "execution": ExecutionResource(backend="inprocess")}
    store = resources["artifact_store"].store()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        first = dg.materialize([loong_replay_dataset, loong_kickstart_net, loong_network_int8], resources=resources,
                               instance=instance)
        assert first.success
        net0 = store.latest("loong", "loong_network_int8")
        source0 = json.loads((net0 / "source.json").read_text())
        assert source0["kind"] == "kickstart" and source0["cycle"] == 0 and Path(source0["checkpoint"]).is_file()
        teacher = store.dir("loong", "loong_teacher", "by-hand")
        (teacher / TEACHER_FILE).write_text(json.dumps({"config": asdict(teacher_config("test")),
                                                        "network": net0.name, "passed": True}))
        store.publish("loong", "loong_teacher", "by-hand")
        cycle = dg.materialize([loong_teacher_targets, loong_value_lost_report, loong_student, loong_cycle_gate],
                               resources=resources, instance=instance, raise_on_error=False)
        (gate,) = [c for c in cycle.get_asset_check_evaluations() if c.check_name == "student_beats_parent"]
        gate_meta = _gate_figures(cycle, "loong_cycle_gate")
        record = json.loads(Path(gate_meta["path"].value).read_text())
        assert record["opponent"] == "parent" and record["wins"] + record["draws"] + record["losses"] == 4
        assert gate.passed == record["passed"] == (record["wilson95"][0] > 0.5) == cycle.success
        assert gate_meta["parent"].value == str(net0 / "network.npz") and gate_meta["cycle"].value == 1
        student_dir = store.latest("loong", "loong_student")
        assert record["network"] == student_dir.name
        assert (store.latest("loong", "loong_cycle_gate") is not None) == gate.passed
        # a gate that failed leaves the published network as it was: loong_network_int8 exports the parent again
        again_int8 = dg.materialize([loong_network_int8], resources=resources, instance=instance)
        exported = json.loads((store.latest("loong", "loong_network_int8") / "source.json").read_text())
        assert exported["kind"] == ("student" if gate.passed else "kickstart") and again_int8.success
        # a passed gate for this student (by hand: four games decide nothing): it is exported as expert-1
        by_hand = store.dir("loong", "loong_cycle_gate", "by-hand")
        (by_hand / CHECK_FILE).write_text(json.dumps({"network": student_dir.name, "passed": True}))
        store.publish("loong", "loong_cycle_gate", "by-hand")
        exported = dg.materialize([loong_network_int8], resources=resources, instance=instance)
        assert exported.success
        # the targets' settings from the asset's config: no information test, no replays
        again = dg.materialize([loong_teacher_targets], resources=resources, instance=instance, run_config={
            "ops": {"loong_teacher_targets": {"config": {"info_units": 0, "replays": False}}}})
        assert again.success
    from ops.loong.teacher_targets import load_targets

    bare = store.latest("loong", "loong_teacher_targets")
    assert not (bare / "replays").exists()
    # folders named by their inputs (so a step run again after a stop resumes there): another config, another one
    first = Path(cycle.asset_materializations_for_node("loong_teacher_targets")[0].metadata["path"].value)
    assert first != bare and first.name.startswith("cycle1-in-") and (first / "replays").is_dir()
    assert all(m != m for m in load_targets(bare, ["margin_sight"])["margin_sight"].to_pylist())  # NaN: untested
    targets = cycle.asset_materializations_for_node("loong_teacher_targets")[0].metadata
    assert targets["decisions"].value > 0 and targets["cycle"].value == 1 and targets["network"].value == net0.name
    report = cycle.asset_materializations_for_node("loong_value_lost_report")[0].metadata
    assert report["cycle"].value == 1 and report["decisions"].value == targets["decisions"].value
    # the report's departures are those with a value lost (the student's action searched too), of the targets' all
    assert 0 < report["departures"].value <= targets["departures"].value
    assert report["departures/untested"].value == 0  # the test profile runs the information test
    student = cycle.asset_materializations_for_node("loong_student")[0].metadata
    assert student["cycle"].value == 1 and Path(student["network_path"].value).is_file()
    assert Path(student["init"].value) == Path(source0["checkpoint"])
    net1 = store.latest("loong", "loong_network_int8")
    source1 = json.loads((net1 / "source.json").read_text())
    assert source1["kind"] == "student" and source1["cycle"] == 1 and net1.name.startswith("cycle1-")
    assert digest(load_network(net1 / "network.npz")) != digest(load_network(net0 / "network.npz"))  # trained on
    (check,) = [c for c in exported.get_asset_check_evaluations() if c.check_name == "bot_equals_torch"]
    assert check.passed
    runs = {r.info.run_name: r for r in tracked_runs(resources)}
    assert runs["loong_student"].data.tags["cycle"] == "1" == runs["loong_teacher_targets"].data.tags["cycle"]
    assert runs["loong_cycle_gate"].data.tags["cycle"] == "1"


def test_only_a_student_whose_gate_passed_is_exported(resources):
    from assets.loong import network_to_export

    store = resources["artifact_store"].store()
    store.dir("loong", "loong_kickstart_net", "kick")
    store.publish("loong", "loong_kickstart_net", "kick")
    student = store.dir("loong", "loong_student", "cycle1-s")
    (student / "source.json").write_text(json.dumps({"cycle": 1}))
    store.publish("loong", "loong_student", "cycle1-s")

    def gate(version: str, network: str, passed: bool) -> None:
        (store.dir("loong", "loong_cycle_gate", version) / CHECK_FILE).write_text(
            json.dumps({"network": network, "passed": passed}))
        store.publish("loong", "loong_cycle_gate", version)

    assert network_to_export(store)["kind"] == "kickstart"  # no gate ran
    gate("g1", "cycle0-other", True)
    assert network_to_export(store)["kind"] == "kickstart"  # another student's gate
    gate("g2", "cycle1-s", False)
    assert network_to_export(store)["kind"] == "kickstart"  # its gate failed
    gate("g3", "cycle1-s", True)
    assert network_to_export(store) == {"kind": "student", "folder": "cycle1-s",
                                        "checkpoint": student / "student.pt", "cycle": 1}
