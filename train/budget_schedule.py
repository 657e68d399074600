"""The time budget of a run: the stop at `max_train_minutes`, and a learning-rate schedule that ends with it.

With `max_train_minutes`, the Trainer's linear schedule is sized for the configured epochs, which
a budget on a slow machine never reaches: the run stops with the learning rate still near its peak.
`BudgetScheduleCallback` measures the step rate (wall time, evaluations included) every
`measure_steps` steps and again after every evaluation, sets the number of steps the budget
allows, and bends the schedule so the learning rate falls linearly from where it is to
`floor` x peak at that step, where training stops. The chosen total is written to
<output_dir>/budget_schedule.json, so a resumed run keeps the schedule it had.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from transformers import TrainerCallback
from transformers.trainer_utils import IntervalStrategy

log = logging.getLogger(__name__)

FILE = "budget_schedule.json"


class TimeBudgetCallback(TrainerCallback):
    """Stop after `minutes` of training, with a last evaluation and save, so a run on a shared or
    slow machine ends on time with its best checkpoint chosen on dev as usual."""

    def __init__(self, minutes: float):
        self.seconds = 60 * minutes
        self.start = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        if self.start is not None and time.monotonic() - self.start > self.seconds:
            control.should_training_stop = control.should_save = True
            # a last evaluation only where the run evaluates at all (a pair encoder stage has no dev set)
            control.should_evaluate = args.eval_strategy != IntervalStrategy.NO
        return control


def budget_lambda(warmup: int, start: int, start_factor: float, total: int, floor: float):
    """LR factor per step: linear warmup to 1, then (from `start`, at `start_factor`) linear to
    `floor` at `total`. Before `start` the factor is the one already applied (the warmup ramp or
    the original schedule), so the curve is continuous where it bends."""
    def f(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        if step >= total:
            return floor
        if step < start:
            return start_factor
        return start_factor + (floor - start_factor) * (step - start) / max(1, total - start)
    return f


class BudgetScheduleCallback(TrainerCallback):
    def __init__(self, minutes: float, measure_steps: int = 100, floor: float = 0.0):
        self.seconds, self.measure_steps, self.floor = 60 * float(minutes), int(measure_steps), float(floor)
        self.start_time = self.start_step = None
        self.total: int | None = None
        self.history: list[dict] = []

    # -------------------------------------------------------------- helpers
    def _file(self, args) -> Path:
        return Path(args.output_dir) / FILE

    def _apply(self, lr_scheduler, step: int, total: int) -> None:
        warmup = self._warmup
        factor = lr_scheduler.lr_lambdas[0](step) if step >= warmup else 1.0
        self.total = max(step + 1, int(total))
        start = max(step, warmup)  # measured during the warmup: the fall starts where the warmup ends
        lr_scheduler.lr_lambdas = [budget_lambda(warmup, start, factor, self.total, self.floor)
                                   for _ in lr_scheduler.lr_lambdas]

    def _estimate(self, args, state, lr_scheduler, why: str) -> None:
        elapsed = time.monotonic() - self.start_time
        done = state.global_step - self.start_step
        if done <= 0 or elapsed <= 0:
            return
        remaining = max(0.0, self.seconds - self.elapsed_before - elapsed)
        total = state.global_step + int(done / elapsed * remaining)
        if state.max_steps and state.max_steps > 0:
            # a budget that outlasts the configured steps or epochs does not stretch the schedule past
            # them: the run stops at max_steps, and the learning rate must reach its floor there
            total = min(total, state.max_steps)
        self._apply(lr_scheduler, state.global_step, total)
        self.history.append({"step": state.global_step, "why": why, "steps_per_s": round(done / elapsed, 4),
                             "total": self.total})
        log.info("budget schedule (%s): %.2f steps/s, the learning rate reaches its floor at step %d", why,
                 done / elapsed, self.total)
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        self._file(args).write_text(json.dumps({"total": self.total, "minutes": self.seconds / 60,
                                                "elapsed_s": self.elapsed_before + elapsed, "history": self.history}))

    # -------------------------------------------------------------- events
    def on_train_begin(self, args, state, control, lr_scheduler=None, **kwargs):
        self.start_time, self.start_step = time.monotonic(), state.global_step
        self._warmup = args.get_warmup_steps(state.max_steps)
        self.elapsed_before = 0.0
        saved = self._file(args)
        if saved.exists() and lr_scheduler is not None:  # a resumed run keeps its schedule and its clock
            s = json.loads(saved.read_text())
            self.history, self.elapsed_before = s.get("history", []), float(s.get("elapsed_s", 0.0))
            self._apply(lr_scheduler, state.global_step, int(s["total"]))
            log.info("budget schedule resumed: floor at step %d", self.total)

    def on_step_end(self, args, state, control, lr_scheduler=None, **kwargs):
        # every measure_steps, not once: the first steps are the slowest (allocation, warm caches), and a
        # rate taken from them alone ends the schedule, and the run, long before the budget does
        done = state.global_step - self.start_step
        if lr_scheduler is not None and done > 0 and done % self.measure_steps == 0:
            self._estimate(args, state, lr_scheduler, f"after {done} steps")
        if self.total is not None and state.global_step >= self.total:
            control.should_training_stop = True
            control.should_evaluate = control.should_save = True
        return control

    def on_evaluate(self, args, state, control, **kwargs):
        # evaluations cost time too: re-measure with them included (the scheduler is not passed here)
        self._pending = True

    def on_step_begin(self, args, state, control, lr_scheduler=None, **kwargs):
        if getattr(self, "_pending", False) and lr_scheduler is not None and self.total is not None:
            self._pending = False
            self._estimate(args, state, lr_scheduler, "after an evaluation")


def budget_callbacks(cfg) -> list:
    """The time-budget stop of a trainer config's `max_train_minutes` and, with
    `budget_schedule.enabled`, the schedule that ends with it (none without a budget)."""
    if not cfg.max_train_minutes:
        return []
    out = [TimeBudgetCallback(float(cfg.max_train_minutes))]
    b = cfg.budget_schedule
    if b.enabled:
        out.append(BudgetScheduleCallback(float(cfg.max_train_minutes), int(b.measure_steps),
                                          float(b.floor)))
    return out
