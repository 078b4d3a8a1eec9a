"""What a new user reads (issue 39 item 7): every job, schedule and sensor is in the README, the schedules and the
sensor are off until the user turns them on, and every check's description is plain words (no code names, no
unfilled placeholders, no issue numbers), with the figures the code holds."""

import re
from pathlib import Path

import dagster as dg

from pipeline.definitions import all_assets, defs

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_every_job_schedule_and_sensor_is_in_the_readme_and_nothing_starts_by_itself():
    repo = defs.get_repository_def()
    jobs = [j.name for j in repo.get_all_jobs() if not j.name.startswith("__")]
    assert len(jobs) >= 8
    missing = [j for j in jobs if f"| `{j}` |" not in README]
    assert not missing, f"jobs not in the README's job table: {missing}"
    for s in repo.schedule_defs:
        assert f"`{s.name}`" in README and s.default_status == dg.DefaultScheduleStatus.STOPPED, s.name
    for s in repo.sensor_defs:
        assert f"`{s.name}`" in README and s.default_status == dg.DefaultSensorStatus.STOPPED, s.name


def test_check_descriptions_are_plain_words_with_the_codes_figures():
    from ops.loong.mimic import FIDELITY_THRESHOLD
    from ops.loong.value_fit import MAX_ECE

    specs = {f"{s.asset_key.to_user_string()}.{s.name}": s.description for a in all_assets
             for s in getattr(a, "check_specs", [])}
    assert len(specs) >= 20
    for name, text in specs.items():
        assert text and len(text) > 30, name
        assert not re.search(r"[{}]|\bops\.|\bassets\.|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\bissue \d+|argmax|\bECE\b",
                             text), (name, text)
    assert f"{FIDELITY_THRESHOLD:.0%}" in specs["loong_mimics.mimics_fidelity"]
    assert f"at most {MAX_ECE:g}" in specs["loong_value_fit.value_calibrated"]
