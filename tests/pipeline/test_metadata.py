"""Tidy metadata (issue 39 item 7): rates and Elo rounded for reading, builds shown by name."""

from assets.metadata import build_label, elo_value, rate_value, rounded
from bot.builds import verify


def test_rates_and_elo_are_rounded_and_json_values_too():
    assert rate_value(0.53712345).value == 0.537 and elo_value(412.3456).value == 412.3
    doc = {"rates": {"build:a": 0.123456}, "weights": [0.333333, 1], "weighting": "(1 - p)^2", "n": 3}
    assert rounded(doc) == {"rates": {"build:a": 0.123}, "weights": [0.333, 1], "weighting": "(1 - p)^2", "n": 3}


def test_a_build_player_is_shown_by_its_name(random_and_foil_builds):
    root = random_and_foil_builds
    foil = verify(root, "foil-c").id
    assert build_label(root, "build:foil-c") == f"foil-c ({foil[:8]})"
    assert build_label(root, f"build:{foil}") == f"foil-c ({foil[:8]})"
    assert build_label(root, f"build:foil-c@{foil[:8]}") == f"foil-c ({foil[:8]})"
    assert build_label(root, "foil") == "" and build_label(root, "build:nobody") == ""
