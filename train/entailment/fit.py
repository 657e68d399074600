"""One HF Trainer run of train.entailment's neural classifier over training triples (the classifier's
family, train.entailment.families, builds the model and encodes the triples)."""
from __future__ import annotations

import logging
import math
from pathlib import Path

from omegaconf import DictConfig

from train.entailment.data import PairDataset, collate_fn
from train.resume import begin_stage, parse_resume

log = logging.getLogger(__name__)


def fit(cfg: DictConfig, classifier, model, tokenizer, triples, out_dir: Path, stage: dict | None = None):
    """One HF Trainer run over `triples`, saving a Trainer checkpoint in `out_dir` every
    cfg.checkpoint_steps steps and resuming from the newest complete one there (the parser's rule,
    train/resume.py's begin_stage: an unfinished stage without one is refused). The caller saves the model and
    then removes `out_dir`. `stage`: the TrainingArguments block (cfg.trainer.args, or cfg.synthetic.trainer.args)."""
    from transformers import Trainer, TrainingArguments

    from models.precision import usable_bf16
    from train.runs import warmup_steps

    stage = stage or cfg.trainer.args
    every = cfg.checkpoint_steps
    ds = PairDataset(classifier, classifier.scorer(model, tokenizer, cfg.eval_batch_size), triples)
    args = TrainingArguments(
        output_dir=str(out_dir), per_device_train_batch_size=stage.per_device_train_batch_size,
        gradient_accumulation_steps=stage.gradient_accumulation_steps, learning_rate=stage.learning_rate,
        num_train_epochs=stage.num_train_epochs, max_steps=stage.max_steps or -1, lr_scheduler_type=stage.lr_scheduler_type,
        warmup_steps=warmup_steps(stage.warmup_steps, max(1, math.ceil(len(ds) / stage.per_device_train_batch_size)
                                                          * stage.num_train_epochs)),
        weight_decay=stage.weight_decay, logging_steps=cfg.logging_steps,
        save_strategy="steps" if every else "no", save_steps=every or 500, save_total_limit=1,
        report_to=["wandb"] if cfg.logger.enabled else [], use_cpu=cfg.use_cpu, seed=cfg.seed,
        bf16=usable_bf16(cfg.bf16, "bf16"), dataloader_num_workers=0, disable_tqdm=True,
        remove_unused_columns=False,
    )
    trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=collate_fn(tokenizer, classifier))
    resume = begin_stage(Path(out_dir), parse_resume(cfg.resume), f"the training stage {Path(out_dir).name}")
    result = trainer.train(resume_from_checkpoint=resume)
    model.eval()
    return {"train_loss": float(result.training_loss), "train_pairs": len(ds), "steps": int(result.global_step)}
