"""The schedule that ends with the time budget (train/budget_schedule.py): its curve, and a tiny
span-parser run whose learning rate reaches the floor where the budget stops it."""
import json

import pytest

from test_span_parser import run_train


def test_the_curve_warms_up_holds_then_falls_to_the_floor():
    from train.budget_schedule import budget_lambda

    f = budget_lambda(warmup=10, start=40, start_factor=0.8, total=140, floor=0.1)
    assert [f(s) for s in (0, 5, 10)] == [0.0, 0.5, 0.8]
    assert f(40) == pytest.approx(0.8) and f(90) == pytest.approx(0.45) and f(140) == f(500) == 0.1


def test_a_budgeted_run_ends_its_schedule_with_the_budget(tmp_path):
    run = tmp_path / "run"
    # 1000 configured steps that a 6-second budget cannot reach: the schedule must end at the budget
    run_train(run, "trainer.args.max_steps=1000", "trainer.args.eval_steps=1000", "trainer.args.logging_steps=1",
              "trainer.args.warmup_steps=2", "max_train_minutes=0.1", "budget_schedule.enabled=true",
              "budget_schedule.measure_steps=5")
    saved = json.loads((run / "checkpoints" / "budget_schedule.json").read_text())
    state = json.loads(sorted((run / "checkpoints").glob("checkpoint-*/trainer_state.json"))[-1].read_text())
    lrs = [h["learning_rate"] for h in state["log_history"] if "learning_rate" in h]
    assert 5 < saved["total"] < 1000 and state["global_step"] <= saved["total"] + 1
    assert lrs[-1] <= 0.15 * max(lrs)  # near the floor (0) at the end, not near the peak
    assert saved["history"][0]["why"] == "after 5 steps"
    # measured again every 5 steps, not once (the first steps are the slowest)
    assert [h["why"] for h in saved["history"][:2]] == ["after 5 steps", "after 10 steps"]
