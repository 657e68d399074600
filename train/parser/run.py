"""Train the QASem parser: records -> text format -> Seq2SeqTrainer, evaluated by generation with
the QA-SRL metrics on dev, best checkpoint kept by dev UA F1.

    python -m train.parser                       # the README's main job: the span parser, ~6 min on one core
    python -m train.parser +experiment=seq2seq_quick   # its seq2seq counterpart (same data and minutes)
    python -m train.parser +experiment=cpu_offline
    RUN_DIR=RUN_DIR bash launch/torchrun_single_node.sh +experiment=t5xl   # every GPU of a node (launch/README.md)

Writes into the run directory: checkpoints/ (resumable), best/ (model, tokenizer, generation
config, qa_format.json), all_results.json, dev_metrics.json, dev_predictions.jsonl.
"""
from __future__ import annotations

import hydra
import torch
from omegaconf import DictConfig, OmegaConf
from transformers import set_seed

from common.data import load_train_dev

from models.parser.qa_format import QAFormat, get_format
from train.budget_schedule import budget_callbacks
from train.divergence import divergence_callbacks
from train.parser.families import ParserFamily, build_family
from train.parser.seq2seq import train_seq2seq
from train.parser.shared import training_arguments
from train.parser.span import train_span
from train.run_guard import claim_run_dir
from train.runs import run_dir_of


def qa_format_of(cfg: DictConfig) -> QAFormat:
    """The run's QA text format (`format`: a preset name or a dict of QAFormat fields), parsed once."""
    return get_format(OmegaConf.to_container(cfg.format, resolve=True) if OmegaConf.is_config(cfg.format) else cfg.format)


def check_config(cfg: DictConfig, family: ParserFamily | None = None) -> QAFormat | None:
    """Everything that can be wrong before a weight is loaded or a step is taken (the family checks its own
    settings as it is built); the seq2seq format."""
    family = family or build_family(cfg.model)
    if family.span:
        return None
    fmt = qa_format_of(cfg)
    args = cfg.trainer.args
    if args.get("fp16") and family.t5:
        raise ValueError(f"fp16 requested for the T5-family model {family.label}: "
                         "T5 overflows to NaN in fp16; use trainer.args.bf16=true (or fp32)")
    return fmt


# Settings that do not change what a run trains (where it writes, logs or pushes, its time budget):
# a rerun may change them and still resume (train/run_guard.py).
# model._target_ follows model.kind (build_family checks), so a run stored before it existed resumes
VOLATILE_KEYS = ("paths", "logger", "hub", "run_dir", "run_name", "resume", "model._target_", "max_train_minutes",
                 "divergence",
                 "trainer.args.per_device_eval_batch_size", "trainer.args.logging_steps",
                 "trainer.args.dataloader_num_workers")


def train(cfg: DictConfig) -> dict:
    """Check the config, claim the run directory (lock, same configuration or resume=never), train."""
    family = build_family(cfg.model)  # the class conf/model/NAME.yaml names by _target_, built once
    fmt = check_config(cfg, family)
    run_dir = run_dir_of(cfg)
    with claim_run_dir(cfg, run_dir, "train.parser", VOLATILE_KEYS):
        if cfg.threads:  # fixed, not the machine's core count: the same command gives the same weights
            torch.set_num_threads(int(cfg.threads))
        set_seed(int(cfg.seed))
        data = load_train_dev(cfg)
        # Under ZeRO-3 the arguments must exist before the model is built (weights load sharded).
        # the span-first family: same run directory, same rules
        args = training_arguments(cfg, run_dir, generate=not family.span)
        callbacks = divergence_callbacks(cfg) + budget_callbacks(cfg)
        if family.span:
            return train_span(cfg, run_dir, data, args, callbacks)
        return train_seq2seq(cfg, family, fmt, run_dir, data, args, callbacks)


@hydra.main(version_base="1.3", config_path="../../conf", config_name="train_parser")
def main(cfg: DictConfig) -> None:
    train(cfg)
