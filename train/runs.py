"""What every trainer shares about its run directory: where it is, and the one resume rule (train/resume.py:
resume=PATH, that checkpoint; auto, the newest complete checkpoint in <run dir>/checkpoints; never, none).
The directory's lock and configuration check are train/run_guard.py; SaveFilesCallback writes into each checkpoint."""
from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig
from transformers import TrainerCallback

from train.resume import check_checkpoint_of, last_complete_checkpoint, parse_resume

log = logging.getLogger(__name__)


def run_dir_of(cfg: DictConfig) -> Path:
    """Hydra's run directory; `run_dir` when train(cfg) is called without Hydra (tests)."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path(cfg.run_dir or "outputs/parser")


def resume_checkpoint(cfg: DictConfig, output_dir: Path, model) -> str | None:
    """The checkpoint a one-model trainer resumes `model` from (train/resume.py): resume=PATH, once checked to be
    a complete checkpoint of `model`; auto, the newest complete one in the run dir; never, none."""
    resume = parse_resume(cfg.resume)
    if resume.mode == "never":
        return None
    if resume.mode == "path":
        check_checkpoint_of(resume.path, model)
        return str(resume.path)
    return last_complete_checkpoint(Path(output_dir))


def train_then_evaluate(trainer, cfg: DictConfig) -> tuple[dict, dict]:
    """Train from the resume point (the one rule above), then evaluate once more: with
    load_best_model_at_end the best checkpoint's weights are loaded, so this is its dev evaluation.
    Returns (training metrics, evaluation metrics)."""
    checkpoint = resume_checkpoint(cfg, Path(trainer.args.output_dir), trainer.model)
    if checkpoint:
        log.info("resuming from %s", checkpoint)
    train_result = trainer.train(resume_from_checkpoint=checkpoint)
    return train_result.metrics, trainer.evaluate()


class SaveFilesCallback(TrainerCallback):
    """Writes {file name: text} into every checkpoint-N folder (the format and parser settings a
    loader needs), so any checkpoint can be evaluated or published."""

    def __init__(self, files: dict[str, str]):
        self.files = dict(files)

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if ckpt.is_dir():
                for name, text in self.files.items():
                    (ckpt / name).write_text(text)


def warmup_steps(value: float, epoch_steps: float) -> int:
    """trainer.args.warmup_steps as HF reads it (below 1: that share of the steps), here of the epochs' steps
    whatever max_steps cuts, as the entailment and pair-encoder trainers always counted it."""
    return int(value * epoch_steps) if value < 1 else int(value)
