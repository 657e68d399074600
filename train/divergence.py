"""Stop a diverged run with a message naming the step, instead of letting it end "successfully".

- StopOnNonFiniteLoss (a Trainer mixin): the loss or the gradient norm is NaN or infinite.
- StalledLossCallback: after `steps` optimizer steps the logged training loss has never gone below
  its first logged value by `min_drop` (relative). A learning rate far too high leaves the loss
  stuck at ln(vocabulary) with a zero gradient norm: every step "succeeds", nothing is learned.
"""
from __future__ import annotations

import math

from transformers import TrainerCallback


class DivergenceError(RuntimeError):
    pass


class StopOnNonFiniteLoss:
    """Trainer mixin: stop with the step number when the training loss or the gradient norm is not
    finite. `_get_grad_norm` is the Trainer's (transformers 5.24) one place that returns the norm of
    every optimizer step, logged or not."""

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        if not math.isfinite(loss.item()):
            raise DivergenceError(f"non-finite training loss ({loss.item()}) at step {self.state.global_step + 1}; "
                                  "stopping (lower trainer.args.learning_rate; for T5, use bf16 or fp32, never fp16)")
        return loss

    def _get_grad_norm(self, model, grad_norm=None):
        norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        value = float(norm.item() if hasattr(norm, "item") else norm) if norm is not None else 0.0
        if not math.isfinite(value):
            raise DivergenceError(f"non-finite gradient norm ({value}) at step {self.state.global_step + 1}; stopping "
                                  "before the optimizer writes it into the weights (lower trainer.args.learning_rate)")
        return norm


class StalledLossCallback(TrainerCallback):
    """Raise DivergenceError `steps` steps in when the logged training loss either
    - has not moved at all over the last `steps` steps (the model puts out one fixed distribution:
      batches differ, so a learning model's loss always does), or
    - has not fallen `min_drop` (relative): the mean of the losses logged in the last quarter of
      those steps is not that far below the mean of the first quarter's (means: batches differ).
    It reads the Trainer's log history, which a resumed run restores from its checkpoint."""

    FLAT = 1e-4  # relative range of the window's losses below which they count as one value

    def __init__(self, steps: int, min_drop: float = 0.01):
        self.steps, self.min_drop = int(steps), float(min_drop)

    def on_log(self, args, state, control, logs=None, **kwargs):
        losses = [(h["step"], float(h["loss"])) for h in state.log_history if "loss" in h]
        if len(losses) < 3 or "loss" not in (logs or {}) or state.global_step < losses[0][0] + self.steps:
            return
        step0, now, quarter = losses[0][0], losses[-1][1], max(1, self.steps // 4)
        window = [v for s, v in losses if s > state.global_step - self.steps]
        early = [v for s, v in losses if s <= step0 + quarter]
        late = [v for s, v in losses if s > state.global_step - quarter]
        mean_early, mean_late = sum(early) / len(early), sum(late) / len(late)
        if len(window) >= 3 and max(window) - min(window) <= self.FLAT * abs(now):
            why = f"has not moved from {now:.4f} over the last {self.steps} steps"
        elif mean_late > mean_early - self.min_drop * abs(mean_early):
            why = (f"has not fallen {self.min_drop:.0%} below where it started ({mean_early:.4f} over steps "
                   f"{step0}-{step0 + quarter}; {mean_late:.4f} over the last {quarter} steps)")
        else:
            return
        raise DivergenceError(
            f"the training loss {why}, at step {state.global_step} (now {now:.4f}, grad_norm {logs.get('grad_norm')}); "
            "stopping: the run is not learning (is the learning rate far too high or too low?). "
            "divergence.stall_steps=null trains on regardless.")


def divergence_callbacks(cfg) -> list:
    """The stall check of a trainer config's `divergence` group (none when stall_steps is null)."""
    d = cfg.divergence
    return [StalledLossCallback(int(d.stall_steps), float(d.min_drop))] if d.stall_steps else []
