"""One HF Trainer run of the contradiction pair encoder (models/contradiction/pair_encoder.py) over labelled
pairs, in its own stage folder: Trainer checkpoints in <stage>/checkpoints (the same call resumes
from the newest complete one, train/runs.py's rule), the repo's non-finite-loss and stalled-loss
stops, an optional time budget, and the model saved to <stage>/model when done (a stage with a
model is not trained again)."""
from __future__ import annotations

import hashlib
import json
import logging
import random
import shutil
from pathlib import Path

from omegaconf import DictConfig

from models.model_paths import resolve_model_path
from models.contradiction.pair_encoder import CONFIG_FILE, PairEncoder
from models.precision import usable_bf16
from train.divergence import StopOnNonFiniteLoss, divergence_callbacks
from train.run_guard import differences
from train.resume import begin_stage, parse_resume
from train.run_guard import move_aside
from train.budget_schedule import TimeBudgetCallback
from train.runs import warmup_steps

log = logging.getLogger(__name__)

SETTINGS_FILE = "stage_settings.json"
# what a stage's weights depend on; how they score (symmetric, calibrate), where and how long (max_train_minutes,
# a budget like the parser's) they run are not among them
TRAINING_KEYS = ("model", "random_config", "tokenizer", "context", "context_words", "max_length")
# encoder.trainer.args -> the name a stage's settings record it under (the names stages were first saved with)
RECORDED_ARGS = {"num_train_epochs": "epochs", "per_device_train_batch_size": "batch_size",
                 "learning_rate": "learning_rate", "max_steps": "max_steps", "bf16": "bf16"}
OPTIONAL_TRAINING_FLAGS = ("freeze_word_embeddings",)
# args a stage depends on that were fixed in code before they were settings: recorded only when they differ from
# those values, so that the stages trained before still match
OPTIONAL_ARGS = {"weight_decay": 0.01, "lr_scheduler_type": "linear", "warmup_steps": 0.1}


def stage_settings(enc: DictConfig, pairs: list[dict], seed: int) -> dict:
    """The settings a stage is trained with: the encoder's training keys, its seed and which pairs (by file
    name and id, so that another data folder or clone holding the same files matches)."""
    from omegaconf import OmegaConf

    ids = "\n".join(f"{Path(p['file']).name}:{p['id']}:{p['label']}" for p in pairs)
    value = lambda v: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v  # noqa: E731
    # recorded only when set, so that the stages trained before the option existed still match
    optional = {k: True for k in OPTIONAL_TRAINING_FLAGS if enc[k]}
    args = enc.trainer.args
    optional.update({k: value(args[k]) for k, fixed in OPTIONAL_ARGS.items() if args[k] != fixed})
    return {**{k: value(enc[k]) for k in TRAINING_KEYS}, **{name: value(args[k]) for k, name in RECORDED_ARGS.items()},
            **optional, "seed": seed, "pairs": len(pairs),
            "pairs_sha256": hashlib.sha256(ids.encode()).hexdigest()}


def check_stage_settings(stage_dir: Path, settings: dict) -> None:
    """Refuse a stage folder trained (or begun) with other settings: reloading or resuming it would give a
    model the configuration does not describe. A stage from before the settings were recorded is taken as is."""
    path = stage_dir / SETTINGS_FILE
    if not path.exists():
        if (stage_dir / "model").exists() or (stage_dir / "checkpoints").exists():
            log.warning("%s: trained before its settings were recorded (%s); taken as it is", stage_dir, SETTINGS_FILE)
        return
    stored = json.loads(path.read_text())
    diff = differences(stored, settings)
    if diff:
        raise ValueError(f"{stage_dir} holds a pair-encoder stage trained with other settings (stored -> now): "
                         + "; ".join(diff) + ". Use another hydra.run.dir, or delete that stage to train it again.")


def build_encoder(enc: DictConfig, seed: int) -> PairEncoder:
    """A fresh classifier head on `enc.model` (minilm, mpnet, a folder or Hub id), or a random
    `enc.random_config` (tests)."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
    from omegaconf import OmegaConf

    labels = {"id2label": {0: "consistent", 1: "contradiction"}, "label2id": {"consistent": 0, "contradiction": 1}}
    if enc.random_config:
        tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(enc.tokenizer or "minilm"))
        mconf = AutoConfig.for_model(**OmegaConf.to_container(enc.random_config, resolve=True), num_labels=2, **labels)
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_config(mconf)
    else:
        path = resolve_model_path(enc.model)
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2, **labels)
    if enc.freeze_word_embeddings:
        # the token embeddings stay as pretrained: for Gemma 3 270M they are 168M of its 268M parameters (a
        # 262k vocabulary), and their dense gradient and AdamW update doubled a training step on one core
        model.get_input_embeddings().requires_grad_(False)
    return PairEncoder(model, tokenizer, context=enc.context, context_words=enc.context_words,
                       max_length=enc.max_length, batch_size=enc.trainer.args.per_device_eval_batch_size,
                       info={"base_model": str(enc.model)})


class _Pairs:
    """Tokenized training pairs; each pair's sentences swapped with probability 1/2 (seeded):
    contradiction is symmetric, and the encoder must not learn which side came first."""

    def __init__(self, encoder: PairEncoder, pairs: list[dict], seed: int):
        rng = random.Random(seed)
        flipped = [dict(p, a=p["b"], b=p["a"]) if rng.random() < 0.5 else p for p in pairs]
        self.items = [dict(f, labels=int(p["label"])) for f, p in zip(encoder.encode(flipped), pairs)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def train_stage(enc: DictConfig, pairs: list[dict], stage_dir: Path, seed: int, cfg: DictConfig) -> PairEncoder:
    """Train (or resume, or reload a finished) stage; returns the encoder, ready to score. resume=never trains it
    afresh, the earlier folder moved aside (a stage of encoder.stages_from, another run's, is only ever reloaded)."""
    import torch
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments, set_seed

    resume = parse_resume(cfg.resume)
    if resume.fresh and not enc.stages_from and stage_dir.is_dir():
        move_aside(stage_dir)
    done = stage_dir / "model"
    settings = stage_settings(enc, pairs, seed)
    check_stage_settings(stage_dir, settings)
    if (done / CONFIG_FILE).exists():
        log.info("pair encoder stage %s is done: loading it", stage_dir)
        encoder = PairEncoder.from_pretrained(done, batch_size=enc.trainer.args.per_device_eval_batch_size,
                                             bf16=bool(enc.trainer.args.bf16))
        encoder.symmetric = bool(enc.symmetric)  # how it scores is the run's choice, not the stage's
        return encoder
    a = enc.trainer.args
    bf16 = usable_bf16(a.bf16, "encoder.trainer.args.bf16")  # native here, or fp32 (models/precision.py)
    stage_dir.mkdir(parents=True, exist_ok=True)
    (stage_dir / SETTINGS_FILE).write_text(json.dumps(settings, indent=1))  # before any checkpoint: a resume is checked too
    set_seed(seed)
    encoder = build_encoder(enc, seed)
    ds = _Pairs(encoder, pairs, seed)
    steps_per_epoch = -(-len(ds) // int(a.per_device_train_batch_size))
    args = TrainingArguments(
        output_dir=str(stage_dir / "checkpoints"), per_device_train_batch_size=int(a.per_device_train_batch_size),
        learning_rate=float(a.learning_rate), num_train_epochs=float(a.num_train_epochs),
        max_steps=int(a.max_steps or -1), warmup_steps=warmup_steps(a.warmup_steps, steps_per_epoch * float(a.num_train_epochs)),
        weight_decay=float(a.weight_decay), lr_scheduler_type=str(a.lr_scheduler_type), logging_steps=int(a.logging_steps),
        save_strategy="steps", save_steps=int(a.save_steps), save_total_limit=1,
        train_sampling_strategy="group_by_length", bf16=bf16, use_cpu=not torch.cuda.is_available(), seed=seed,
        report_to=[], dataloader_num_workers=0, disable_tqdm=not bool(enc.progress),
        remove_unused_columns=False)

    class PairTrainer(StopOnNonFiniteLoss, Trainer):
        pass

    callbacks = divergence_callbacks(cfg)
    if enc.max_train_minutes:
        callbacks.append(TimeBudgetCallback(float(enc.max_train_minutes)))
    trainer = PairTrainer(model=encoder.model, args=args, train_dataset=ds, callbacks=callbacks,
                          data_collator=DataCollatorWithPadding(encoder.tokenizer))
    checkpoint = begin_stage(Path(args.output_dir), resume, f"the pair encoder stage {stage_dir.name}")
    result = trainer.train(resume_from_checkpoint=checkpoint)
    encoder.model = trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
    encoder.info.update(train_pairs=len(ds), contradictions=sum(p["label"] for p in pairs),
                        steps=int(result.global_step), train_loss=float(result.training_loss),
                        minutes=round(result.metrics.get("train_runtime", 0.0) / 60, 2))
    encoder.bf16, encoder.symmetric = bf16, bool(enc.symmetric)
    tmp = stage_dir / "model.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    encoder.save_pretrained(tmp)
    tmp.rename(done)  # the stage counts as done only once its model is whole
    shutil.rmtree(stage_dir / "checkpoints", ignore_errors=True)
    log.info("pair encoder %s: %d pairs, %d steps, %.1f min, loss %.4f", stage_dir, len(ds), result.global_step,
             encoder.info["minutes"], encoder.info["train_loss"])
    return encoder
