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
    # 100,000 configured steps that a 6-second budget cannot reach (a fast machine does ~1,000 of these
    # tiny steps): the schedule must end at the budget
    run_train(run, "trainer.args.max_steps=100000", "trainer.args.eval_steps=1000", "trainer.args.logging_steps=1",
              "trainer.args.warmup_steps=2", "max_train_minutes=0.1", "budget_schedule.enabled=true",
              "budget_schedule.measure_steps=5")
    saved = json.loads((run / "checkpoints" / "budget_schedule.json").read_text())
    state = json.loads(sorted((run / "checkpoints").glob("checkpoint-*/trainer_state.json"))[-1].read_text())
    lrs = [h["learning_rate"] for h in state["log_history"] if "learning_rate" in h]
    assert 5 < saved["total"] < 100000 and state["global_step"] <= saved["total"] + 1
    assert lrs[-1] <= 0.15 * max(lrs)  # near the floor (0) at the end, not near the peak
    assert saved["history"][0]["why"] == "after 5 steps"
    # measured again every 5 steps, not once (the first steps are the slowest)
    assert [h["why"] for h in saved["history"][:2]] == ["after 5 steps", "after 10 steps"]


def test_a_budget_longer_than_the_configured_steps_ends_the_schedule_at_max_steps(tmp_path):
    """A budget the run never uses up (a fast machine, few steps) must not stretch the fall past
    max_steps, where the Trainer stops anyway: the learning rate still reaches its floor there."""
    from types import SimpleNamespace

    import torch
    from train.budget_schedule import BudgetScheduleCallback

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    cb = BudgetScheduleCallback(minutes=60, measure_steps=5)
    args = SimpleNamespace(output_dir=str(tmp_path), get_warmup_steps=lambda n: 0)
    state = SimpleNamespace(global_step=0, max_steps=40)
    control = SimpleNamespace(should_training_stop=False, should_evaluate=False, should_save=False)
    cb.on_train_begin(args, state, control, lr_scheduler=sched)
    cb.start_time -= 1.0  # 5 steps in one second: an hour's budget allows ~18,000
    state.global_step = 5
    cb.on_step_end(args, state, control, lr_scheduler=sched)
    assert cb.total == 40
    assert sched.lr_lambdas[0](40) == 0.0 and sched.lr_lambdas[0](20) > 0.0


@pytest.mark.parametrize("strategy,evaluates", [("no", False), ("steps", True)])
def test_the_time_budget_evaluates_at_its_end_only_where_the_run_evaluates(strategy, evaluates, tmp_path):
    """A pair encoder stage has no dev set: a last evaluation there raised 'evaluation requires an eval_dataset'."""
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from train.budget_schedule import TimeBudgetCallback

    args = TrainingArguments(str(tmp_path), use_cpu=True, eval_strategy=strategy, eval_steps=10, report_to=[])
    cb, control = TimeBudgetCallback(minutes=0.0), TrainerControl()
    cb.on_train_begin(args, TrainerState(), control)
    cb.on_step_end(args, TrainerState(), control)
    assert control.should_training_stop and control.should_save and control.should_evaluate is evaluates
