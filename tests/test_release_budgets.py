"""A release profile trains on steps or epochs, never on the clock (release/budgets.py): every shipped profile
passes, and `python -m release` refuses one whose training stage sets max_train_minutes, in its experiment
file or in the profile's overrides, before it reads or writes anything, naming the stage."""
from __future__ import annotations

from pathlib import Path

import pytest

import release.__main__ as release_cli
from release.budgets import time_budgets

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "release" / "profiles"


@pytest.mark.parametrize("profile", sorted(p.stem for p in PROFILES.glob("*.yaml")))
def test_every_shipped_profile_stops_on_steps_or_epochs(profile):
    assert time_budgets(PROFILES / f"{profile}.yaml", ROOT / "conf") == []


def test_a_profile_on_the_clock_is_refused_before_anything_runs(tmp_path, monkeypatch):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "clocked.yaml").write_text(
        "train:\n"
        "  parser: [+experiment=cpu_offline]                                   # its experiment file: 115 minutes\n"
        "  detector: [+experiment=detector_quick, max_train_minutes=6]         # an override\n"
        "  entailment: [+experiment=entailment_stacked]\n"
        "  contradiction: [+experiment=contradiction_quick, encoder.max_train_minutes=4]   # a nested one\n"
        "encoder_stages: [fold0, fold1]\nevaluate: {}\n")
    monkeypatch.setattr(release_cli, "PROFILES", profiles)
    folder = tmp_path / "release"
    with pytest.raises(SystemExit) as e:
        release_cli.main(["clocked", str(folder)])
    msg = str(e.value)
    assert msg.startswith("release refused: profile clocked stops training on the clock")
    assert "parser: max_train_minutes=115 (+experiment=cpu_offline)" in msg
    assert "detector: max_train_minutes=6 (+experiment=detector_quick max_train_minutes=6)" in msg
    assert "contradiction: encoder.max_train_minutes=4" in msg
    assert not any(line.strip().startswith("entailment:") for line in msg.splitlines())  # it trains no clock
    assert not folder.exists()  # nothing written, not even the lock


def test_an_unknown_training_stage_is_named(tmp_path):
    profile = tmp_path / "odd.yaml"
    profile.write_text("train:\n  tagger: []\n")
    with pytest.raises(ValueError, match="train.tagger is not a training stage"):
        time_budgets(profile, ROOT / "conf")
