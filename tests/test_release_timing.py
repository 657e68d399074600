"""The README's release time (release/timing.py): the manifest's stage times scheduled on N cores over the
release's graph, adopted stages counted at their kind's mean and missing ones named."""
import pytest

from release.layout import stage_needs
from release.timing import schedule, stage_times, time_line


def test_the_longest_path_goes_first_and_a_stage_waits_for_what_it_needs():
    needs = {"a": [], "b": [], "c": ["a"], "d": ["b", "c"]}
    wall = {"a": 10.0, "b": 4.0, "c": 10.0, "d": 1.0}
    assert schedule(needs, wall, 1) == 25.0
    assert schedule(needs, wall, 2) == 21.0  # a then c on one core, b beside them; d after c
    assert schedule(needs, wall, 4) == 21.0  # the chain a -> c -> d bounds it


def test_an_adopted_stage_counts_at_its_kinds_mean_and_a_missing_one_is_named():
    needs = stage_needs(["fold0"], [14, 15])
    stages = {s: {"wall_s": 100.0} for s in needs if s != "contradiction_ensemble"}
    stages.update(encoder_fold0={"wall_s": 3.0}, encoder_fold0_seed14={"wall_s": 1000.0},
                  encoder_fold0_seed15={"wall_s": 1200.0})
    m = {"profile": "full", "date": "2026-12-06", "stages": stages,
         "metrics": {"contradiction": {"seeds": {"seeds": {"13": {}, "14": {}, "15": {}}}}}}
    wall, stood_in, missing = stage_times(m, needs)
    assert stood_in == ["encoder_fold0"] and wall["encoder_fold0"] == pytest.approx(1100.0)
    assert missing == ["contradiction_ensemble"] and wall["contradiction_ensemble"] == 0.0
    line = time_line(m)
    assert "encoder_fold0 adopted from earlier runs" in line and "contradiction_ensemble not in this manifest" in line
    assert "pair encoder folds 55 min (3 stages)" in line  # 1100 + 1000 + 1200 s
