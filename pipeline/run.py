"""A job from a terminal (`make demo`, `make cycle`, `make release`; issue 39 item 5): the job's log at INFO, then a
short verdict block for every gate it evaluated and a line for every step that failed, and an exit status: 0 when
every step succeeded, 1 otherwise. A failed gate is a verdict, never a stack trace.

    .venv/bin/python -m pipeline.run loong_cycle_job          # on the project's instance (DAGSTER_HOME)
    .venv/bin/python -m pipeline.run --last main_job          # the verdicts of the job's latest run (make demo)

The gates' blocks come from their checks' metadata (``games.gate.Verdict.metadata``: the headline, the statistic,
what was published); a check without a verdict is one line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

import dagster as dg

LOG_LEVEL = "INFO"


def verdict_lines(result) -> list[str]:
    """Every evaluated check as its verdict (a gate's headline and what was published; a check that did not pass adds
    its description and the next step) or one line; then every failed
    step's one-line reason (a failed blocking check's own failure is its verdict, not repeated)."""
    lines = []
    for ev in result.get_asset_check_evaluations():
        meta = {k: v.value for k, v in ev.metadata.items()}
        if "verdict" in meta:  # a passed check: its headline and what was published; any other: its whole block
            lines.append(f"== {meta['verdict']}")
            lines += [f"   {meta[k]}" if k == "statistic" else f"   {k}: {meta[k]}"
                      for k in (("published",) if ev.passed else ("statistic", "published", "next")) if meta.get(k)]
        else:
            lines.append(f"== {ev.check_name} ({ev.asset_key.to_user_string()}): "
                         f"{'pass' if ev.passed else 'FAIL'}")
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        data = event.step_failure_data
        err = data.error
        if err is not None and "DagsterAssetCheckFailedError" in (err.cls_name or ""):
            continue  # the gate's verdict above says it
        if data.user_failure_data is not None and data.user_failure_data.description:
            why = data.user_failure_data.description
        elif err is not None:
            why = f"{err.cls_name}: {(err.message or '').strip().splitlines()[0] if err.message else ''}"
        else:
            why = "failed"
        lines.append(f"!! step {event.step_key}: {why}")
    return lines


def run(job_name: str, *, defs: dg.Definitions | None = None, instance: dg.DagsterInstance | None = None,
        out: TextIO = sys.stdout, run_config: dict | None = None) -> int:
    """Execute ``job_name`` in this process; print its verdicts to ``out``; 0 when it succeeded."""
    if defs is None:
        from pipeline.definitions import defs
    try:
        job = defs.resolve_job_def(job_name)
    except Exception:  # noqa: BLE001 - an unknown name: one line with the known ones
        names = sorted(j.name for j in defs.resolve_all_job_defs() if not j.name.startswith("__"))
        print(f"pipeline.run: unknown job {job_name!r} (jobs: {', '.join(names)})", file=sys.stderr)
        return 2
    config = {"loggers": {"console": {"config": {"log_level": LOG_LEVEL}}}, **(run_config or {})}
    own = instance is None
    instance = dg.DagsterInstance.get() if own else instance
    try:
        result = job.execute_in_process(instance=instance, raise_on_error=False, run_config=config)
    finally:
        if own:
            instance.dispose()
    lines = verdict_lines(result)
    print(f"\n{job_name}: {'succeeded' if result.success else 'stopped'}", file=out)
    for line in lines:
        print(line, file=out)
    return 0 if result.success else 1


class _StoredRun:
    """A finished run read back from the instance's event log, answering what ``verdict_lines`` asks of a result."""

    def __init__(self, events: list) -> None:
        self.all_events = events

    def get_asset_check_evaluations(self) -> list:
        return [e.event_specific_data for e in self.all_events
                if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION]


def report_last(job_name: str, *, instance: dg.DagsterInstance | None = None, out: TextIO = sys.stdout) -> int:
    """Print the verdicts of ``job_name``'s latest run on the instance, as ``run`` prints them after its own (``make
    demo`` runs the main job with ``dagster job execute``, on Dagster's own executor, then this); 0 when that run
    succeeded, 1 when it did not, 2 when the job never ran."""
    own = instance is None
    instance = dg.DagsterInstance.get() if own else instance
    try:
        runs = instance.get_runs(filters=dg.RunsFilter(job_name=job_name), limit=1)
        if not runs:
            print(f"pipeline.run: no run of {job_name} on this instance", file=sys.stderr)
            return 2
        last = runs[0]
        events = [r.dagster_event for r in instance.all_logs(last.run_id) if r.dagster_event is not None]
    finally:
        if own:
            instance.dispose()
    ok = last.status == dg.DagsterRunStatus.SUCCESS
    print(f"\n{job_name} (run {last.run_id[:8]}): {'succeeded' if ok else 'stopped'}", file=out)
    for line in verdict_lines(_StoredRun(events)):
        print(line, file=out)
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "--last":
        return report_last(args[1])
    if len(args) != 1:
        print("usage: python -m pipeline.run JOB_NAME | --last JOB_NAME", file=sys.stderr)
        return 2
    return run(args[0])


if __name__ == "__main__":
    sys.exit(main())
