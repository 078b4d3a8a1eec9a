"""``pipeline.run`` (make demo / cycle / release): a job whose blocking gate fails at tiny size ends with the gate's
verdict block (the record, the Wilson interval, the bar, what was published, the next step) and exit status 1,
with no stack trace in the output; an unknown job is one line."""

import io

import dagster as dg

from pipeline.definitions import all_assets, loong_cycle_job
from pipeline.run import run
from tests.pipeline.test_loong_teacher import publish_network


def test_a_failed_gate_ends_the_job_with_its_verdict_and_no_traceback(resources, tmp_path, capfd):
    publish_network(resources)
    defs = dg.Definitions(assets=all_assets, jobs=[loong_cycle_job], resources=resources)
    out = io.StringIO()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        code = run("loong_cycle_job", defs=defs, instance=instance, out=out)
    text = out.getvalue()
    assert code == 1 and "loong_cycle_job: stopped" in text
    verdict = next(line for line in text.splitlines() if line.startswith("== teacher_beats_network: "))
    assert "over 2 games" in verdict and "Wilson 95% [" in verdict and "bar: lower bound > 0.50" in verdict
    assert "   published: nothing: loong_teacher keeps its last published version" in text
    assert "   next: " in text
    logs = capfd.readouterr()
    assert "Traceback" not in text + logs.out + logs.err
    assert "teacher_beats_network" in logs.err + logs.out  # the block is in the job's own log too


def test_an_unknown_job_is_one_line(capsys):
    assert run("no_such_job") == 2
    err = capsys.readouterr().err
    assert err.startswith("pipeline.run: unknown job 'no_such_job' (jobs: ") and err.count("\n") == 1
