"""Train the span-first parser (models/parser/span.py) with the HF Trainer: the same run
directory, resume rule, best-checkpoint rule (dev UA F1), W&B and Hub push as the seq2seq parser.
Reached through `python -m train.parser model=span_minilm` (or +experiment=span_cpu / span_gpu /
span_tiny): train.parser hands every config of the span family (train/parser/families.py) to `train_span` here.

At every evaluation the decoding threshold of each predicate type (verbal, nominal) is chosen on
that type's dev records for UA F1 (a grid of 0.05 steps) and written into the model config
(`thresholds`), so each checkpoint carries its own.
"""
from __future__ import annotations

import json
import logging
import os
from collections import Counter
from pathlib import Path

from datasets import Dataset
from omegaconf import DictConfig
from transformers import AutoModel, AutoTokenizer, Trainer

from common.tracking import init_wandb
from metrics.qasrl import evaluate_records
from models.model_paths import resolve_model_path
from models.parser.question_templates import build_vocabulary, template_of
from models.parser.span import KIND, PARSER_FILE, SpanParser, SpanParserConfig, SpanParserModel
from models.parser.span_features import Encoder, collate, marker_tokens, prepare_tokenizer
from models.parser.span_thresholds import THRESHOLDS, choose_thresholds
from train.divergence import StopOnNonFiniteLoss
from train.parser.shared import write_run
from train.runs import SaveFilesCallback, train_then_evaluate

log = logging.getLogger(__name__)


def build_model(model_cfg, train_records: list[dict]) -> tuple[SpanParserModel, object, Counter]:
    """(model with a pretrained or tiny random encoder, tokenizer, template vocabulary counts)."""
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(model_cfg.tokenizer or model_cfg.encoder))
    markers = marker_tokens(tokenizer)
    prepare_tokenizer(tokenizer, markers)
    if model_cfg.encoder_config:  # a tiny random encoder for tests
        from transformers import AutoConfig

        enc = dict(model_cfg.encoder_config)
        encoder = AutoModel.from_config(AutoConfig.for_model(enc.pop("model_type"), **enc))
    else:
        encoder = AutoModel.from_pretrained(resolve_model_path(model_cfg.encoder))
    if len(tokenizer) > encoder.get_input_embeddings().num_embeddings:
        encoder.resize_token_embeddings(len(tokenizer))  # markers the vocabulary lacked
    if model_cfg.freeze_word_embeddings:
        encoder.get_input_embeddings().weight.requires_grad_(False)
    # data.oversample repeats records as the same objects: the vocabulary counts each once, so that a
    # template seen once is not let in by its repeats
    distinct = list({id(r): r for r in train_records}.values())
    templates, inflections, left_out = build_vocabulary(distinct, int(model_cfg.template_min_count))
    enc_cfg = encoder.config.to_dict()
    config = SpanParserConfig(encoder=enc_cfg, max_span_width=int(model_cfg.max_span_width),
                              span_hidden=int(model_cfg.span_hidden), dropout=float(model_cfg.dropout),
                              templates=templates, inflections=inflections, max_subwords=int(model_cfg.max_subwords),
                              markers=markers, pad_token_id=tokenizer.pad_token_id)
    return SpanParserModel(config, encoder=encoder), tokenizer, left_out


def featurize(records: list[dict], encoder: Encoder, templates: list[str]) -> tuple[Dataset, Counter]:
    """Training features: encodings plus gold spans (start, end, template id) inside the window;
    what cannot be used (spans too long, outside the window, templates outside the vocabulary)
    is counted."""
    index = {t: i for i, t in enumerate(templates)}
    rows, counts = [], Counter()
    width = encoder.max_span_width
    for rec in records:
        try:
            enc = encoder.encode(rec)
        except (ValueError, IndexError) as e:
            counts["invalid_record"] += 1
            log.warning("training record skipped: %s", e)
            continue
        n, off = len(enc["word_index"]), enc["offset"]
        spans = {}
        for qa in rec.get("qas") or []:
            slots = qa.get("slots")
            t = index.get(template_of(slots, rec.get("verb_form")), -1) if slots else -1
            counts["question_outside_vocabulary"] += t < 0
            for s, e in qa.get("answers") or []:
                s, e = s - off, e - off
                if s < 0 or e > n:
                    counts["span_outside_window"] += 1
                elif e - s > width:
                    counts["span_longer_than_max_width"] += 1
                elif (s, e) not in spans or spans[(s, e)] < 0:
                    spans[(s, e)] = t
        enc["spans"] = [[s, e, t] for (s, e), t in sorted(spans.items())]
        counts["spans"] += len(enc["spans"])
        rows.append(enc)
    counts["windowed"] = encoder.stats["windowed"]
    return Dataset.from_list(rows), counts


class SpanTrainer(StopOnNonFiniteLoss, Trainer):
    """Evaluation = decode dev at every threshold of the grid, keep the best UA F1 (the threshold
    goes into the model config, hence into the checkpoint saved right after)."""

    def __init__(self, *args, dev_records=None, head_lr_scale: float = 1.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.dev_records, self.head_lr_scale = dev_records, float(head_lr_scale)
        self.last_eval: dict = {}

    def create_optimizer(self, model=None):
        """The heads start from nothing: they get `head_lr_scale` x the encoder's learning rate."""
        if self.optimizer is None and self.head_lr_scale != 1.0:
            model = model or self.model
            decay = set(self.get_decay_parameter_names(model))
            cls, kwargs = self.get_optimizer_cls_and_kwargs(self.args, model)
            groups = []
            for head in (False, True):
                lr = self.args.learning_rate * (self.head_lr_scale if head else 1.0)
                for d in (True, False):
                    params = [p for n, p in model.named_parameters()
                              if p.requires_grad and n.startswith("encoder.") != head and (n in decay) == d]
                    if params:
                        groups.append({"params": params, "weight_decay": self.args.weight_decay if d else 0.0,
                                       "lr": lr})
            self.optimizer = cls(groups, **kwargs)
        return super().create_optimizer(model)

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict:
        parser = SpanParser(self.model, self.processing_class, batch_size=self.args.per_device_eval_batch_size,
                            device="keep")
        probs, templates, encs, _ = parser.span_probabilities(self.dev_records, min(THRESHOLDS))
        chosen, overall = choose_thresholds(parser, self.dev_records, probs, templates, encs)
        preds, counts = parser.to_records(self.dev_records, probs, templates, encs, chosen)
        m = evaluate_records(self.dev_records, preds)
        self.model.config.thresholds = chosen
        self.model.config.threshold = overall  # the best single one (the choice before the per-type one)
        self.last_eval = {"predictions": preds, "metrics": m, "counts": counts, "threshold": chosen}
        metrics = {f"{metric_key_prefix}_{kind}_{k}": m[kind][k] for kind in ("ua", "la")
                   for k in ("precision", "recall", "f1")}
        metrics.update({f"{metric_key_prefix}_threshold_{t}": v for t, v in chosen.items()},
                       **{f"{metric_key_prefix}_threshold": overall})
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics


def train_span(cfg: DictConfig, run_dir: Path, data: tuple, args, callbacks: list) -> dict:
    train_records, dev_records, is_sample = data
    model, tokenizer, left_out = build_model(cfg.model, train_records)
    c = model.config
    model.train_chunk_words = int(cfg.model.train_chunk_words or 0)
    train_ds, counts = featurize(train_records, Encoder(tokenizer, c.markers, c.max_subwords, c.max_span_width),
                                 c.templates)
    log.info("span parser: %d question templates (%d QAs of %d rarer templates left out); training spans: %s",
             len(c.templates), left_out["qas"], left_out["templates"], dict(counts))

    wandb_run = init_wandb(cfg, "train-parser", str(run_dir), name=cfg.run_name) \
        if int(os.environ.get("RANK", "0")) == 0 else None
    parser_json = json.dumps({"kind": KIND})
    callbacks = [SaveFilesCallback({PARSER_FILE: parser_json}), *callbacks]
    pad, width = tokenizer.pad_token_id, c.max_span_width
    # training memory: batches padded to a multiple of N subwords / words, so that glibc reuses the blocks of
    # a few tensor shapes instead of keeping one set per batch length (0: each batch's own length)
    multiple = int(cfg.model.train_pad_multiple or 0)
    # eval_dataset only satisfies the Trainer's checks: SpanTrainer.evaluate decodes dev_records itself
    trainer = SpanTrainer(model=model, args=args, train_dataset=train_ds, processing_class=tokenizer,
                          eval_dataset=Dataset.from_dict({"idx": list(range(len(dev_records)))}),
                          data_collator=lambda feats: collate(feats, pad, width, multiple=multiple), callbacks=callbacks,
                          dev_records=dev_records, head_lr_scale=float(cfg.model.head_lr_scale))
    # The best checkpoint is evaluated once more at the end, which re-chooses its threshold on dev.
    train_metrics, eval_metrics = train_then_evaluate(trainer, cfg)
    metrics = {**train_metrics, **eval_metrics, "best_checkpoint": trainer.state.best_model_checkpoint,
               "train_predicates": len(train_records), "dev_predicates": len(dev_records),
               "training_spans": dict(counts), "templates": len(c.templates), "sample_data": is_sample}
    best_dir = run_dir / "best"
    trainer.save_model(str(best_dir))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(best_dir)
        (best_dir / PARSER_FILE).write_text(parser_json)
        last = trainer.last_eval
        dev = {**last["metrics"], "decode": last["counts"], "threshold": last["threshold"]}
        write_run(cfg, run_dir, last["predictions"], dev, metrics, eval_metrics, wandb_run,
                  title=f"dev ({len(dev_records)} predicates, threshold {last['threshold']})", is_sample=is_sample)
    if wandb_run is not None:
        wandb_run.finish()
    return metrics
