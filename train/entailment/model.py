"""The classifier's model for train.entailment: build it for the configured family (from a name,
a random config or a checkpoint; LoRA when configured), wrap it as its scorer, and one HF Trainer
run over training triples."""
from __future__ import annotations

import logging
import math
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from models import entailment as E
from models.model_paths import resolve_model_path
from train.entailment.data import PairDataset, collate_fn
from train.resume import begin_stage, parse_resume

log = logging.getLogger(__name__)


def load_tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def build_model(cfg: DictConfig, init_from: str | None = None):
    """(model, tokenizer) for the configured family; `init_from` = a checkpoint to continue from."""
    import torch
    from transformers import AutoConfig

    c = cfg.classifier
    cls = E.model_class(c.family)
    if init_from:
        tokenizer = load_tokenizer(init_from)
        model = cls.from_pretrained(init_from)
    elif c.random_config:
        tokenizer = load_tokenizer(resolve_model_path(c.tokenizer or "minilm"))
        rc = OmegaConf.to_container(c.random_config, resolve=True)
        mconf = AutoConfig.for_model(**rc)
        if c.family == "cross_encoder":
            mconf.num_labels = 2
        torch.manual_seed(cfg.seed)
        model = cls.from_config(mconf)
    else:
        path = resolve_model_path(c.model_name_or_path)
        tokenizer = load_tokenizer(resolve_model_path(c.tokenizer) or path)
        kw = {"num_labels": 2} if c.family == "cross_encoder" else {}
        model = cls.from_pretrained(path, **kw)
    if c.family == "cross_encoder":
        model.config.id2label, model.config.label2id = {0: "not_supported", 1: "supported"}, \
            {"not_supported": 0, "supported": 1}
    if c.family == "causal_lm" and tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if model.config.pad_token_id is None and tokenizer.pad_token_id is not None:
        model.config.pad_token_id = tokenizer.pad_token_id
    if c.family == "seq2seq":
        # transformers 5: T5 averages its own loss; do not let the Trainer rescale it
        model.accepts_loss_kwargs = False
        if model.config.decoder_start_token_id is None:
            model.config.decoder_start_token_id = tokenizer.pad_token_id
    if c.lora.enabled:
        from peft import LoraConfig, TaskType, get_peft_model

        task = TaskType[E.scorer_class(c.family).peft_task]
        lc = c.lora
        model = get_peft_model(model, LoraConfig(task_type=task, r=lc.r, lora_alpha=lc.alpha,
                                                 lora_dropout=lc.dropout,
                                                 target_modules=list(lc.target_modules) if lc.get("target_modules") else None))
    return model, tokenizer


def make_scorer(cfg: DictConfig, model, tokenizer) -> E.NeuralScorer:
    c = cfg.classifier
    kw = dict(max_length=c.max_length, chunk_words=c.chunk_words, chunk_overlap=c.chunk_overlap,
              batch_size=cfg.eval_batch_size, top_k_chunks=c.top_k_chunks)
    if c.family == "causal_lm" and c.prompt:
        kw["prompt"] = c.prompt
    return E.scorer_class(c.family)(model, tokenizer, **kw)


def neural_scores(cfg, model, tokenizer, examples) -> list[float]:
    return make_scorer(cfg, model, tokenizer).score_examples(examples)


def fit(cfg: DictConfig, model, tokenizer, triples, out_dir: Path, stage: dict | None = None):
    """One HF Trainer run over `triples`, saving a Trainer checkpoint in `out_dir` every
    cfg.checkpoint_steps steps and resuming from the newest complete one there (the parser's rule,
    train/resume.py's begin_stage: an unfinished stage without one is refused). The caller saves the model and
    then removes `out_dir`. `stage`: the TrainingArguments block (cfg.trainer.args, or cfg.synthetic.trainer.args)."""
    from transformers import Trainer, TrainingArguments

    from models.precision import usable_bf16
    from train.runs import warmup_steps

    stage = stage or cfg.trainer.args
    every = cfg.checkpoint_steps
    scorer = make_scorer(cfg, model, tokenizer)
    ds = PairDataset(scorer, triples)
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
    trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=collate_fn(tokenizer, cfg.classifier.family))
    resume = begin_stage(Path(out_dir), parse_resume(cfg.resume), f"the training stage {Path(out_dir).name}")
    result = trainer.train(resume_from_checkpoint=resume)
    model.eval()
    return {"train_loss": float(result.training_loss), "train_pairs": len(ds), "steps": int(result.global_step)}
