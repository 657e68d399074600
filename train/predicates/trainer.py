"""The HF Trainer for the predicate detector: a token classifier with two independent sigmoid
outputs per word (verbal, nominal), trained with a masked binary cross-entropy because each source
labels only one of them. Dynamic padding, the repo's non-finite-loss stop, and TrainingArguments
from `trainer.args` with a checkpoint saved at each evaluation (so a killed run resumes)."""
from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf
from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

from models.precision import usable_bf16
from models.model_paths import resolve_model_path
from models.predicates import LABELS
from train.predicates.data import IGNORE
from train.divergence import StopOnNonFiniteLoss


def masked_bce(logits, labels):
    """Mean binary cross-entropy over the known labels only. logits, labels: [batch, tokens, 2];
    labels are 1 / 0, or IGNORE where unknown (the other source's type, padding, non-first
    sub-tokens). Unknown entries get no loss and no gradient."""
    import torch.nn.functional as F

    known = labels != IGNORE
    if not bool(known.any()):
        return logits.sum() * 0.0
    return F.binary_cross_entropy_with_logits(logits.float()[known], labels.float()[known])


class TokenLabelCollator:
    """Pads a batch to its longest window: input_ids / attention_mask by the tokenizer
    (DataCollatorWithPadding), the [tokens, 2] label grid with IGNORE. (DataCollatorForTokenClassification
    pads one label per token; here a token carries two.)"""

    def __init__(self, tokenizer):
        self.pad = DataCollatorWithPadding(tokenizer)

    def __call__(self, features: list[dict]) -> dict:
        batch = self.pad([{k: v for k, v in f.items() if k != "labels"} for f in features])
        labels = torch.full((len(features), batch["input_ids"].shape[1], 2), IGNORE, dtype=torch.long)
        for r, f in enumerate(features):
            labels[r, : len(f["labels"])] = torch.as_tensor(f["labels"], dtype=torch.long)
        batch["labels"] = labels
        return batch


class PredicateTrainer(StopOnNonFiniteLoss, Trainer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # compute_loss returns a per-batch mean: let the Trainer scale it for gradient accumulation
        self.model_accepts_loss_kwargs = False

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")  # the model's own loss (softmax cross-entropy) does not fit two sigmoids
        outputs = model(**inputs)
        loss = masked_bce(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


def training_arguments(cfg: DictConfig, run_dir: Path) -> TrainingArguments:
    """`trainer.args` (use_cpu null: cpu only when no cuda) plus what every detector run needs:
    checkpoints in <run dir>/checkpoints, saved
    at each evaluation (dev loss only: thresholds are chosen once, after training), the run's seed.
    The last step's model is the one kept, not the best by dev loss."""
    args = OmegaConf.to_container(cfg.trainer.args, resolve=True)
    if args.get("use_cpu") is None:  # null: cuda when available, else cpu (where bf16 is autocast)
        args["use_cpu"] = not torch.cuda.is_available()
    args.update(output_dir=str(run_dir / "checkpoints"), save_strategy=args.get("eval_strategy", "no"),
                prediction_loss_only=True, load_best_model_at_end=False, seed=int(cfg.seed), report_to=[])
    args["bf16"] = usable_bf16(args.get("bf16"), "trainer.args.bf16")
    if args["save_strategy"] == "steps":
        args["save_steps"] = args.get("eval_steps")
    return TrainingArguments(**args)


def build_model(cfg: DictConfig):
    """(token-classification model with two outputs, tokenizer): random from
    `detector_model.random_config` (tests), else pretrained from `model_name_or_path`."""
    from transformers import AutoConfig, AutoModelForTokenClassification, AutoTokenizer

    c = cfg.detector_model
    id2label = dict(enumerate(LABELS))
    if c.get("random_config"):
        tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(c.get("tokenizer") or "minilm"))
        mconf = AutoConfig.for_model(**OmegaConf.to_container(c.random_config, resolve=True))
        mconf.num_labels, mconf.id2label, mconf.label2id = 2, id2label, {v: k for k, v in id2label.items()}
        torch.manual_seed(cfg.seed)
        model = AutoModelForTokenClassification.from_config(mconf)
    else:
        path = resolve_model_path(c.model_name_or_path)
        tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(c.get("tokenizer") or c.model_name_or_path))
        model = AutoModelForTokenClassification.from_pretrained(path, num_labels=2, id2label=id2label,
                                                                label2id={v: k for k, v in id2label.items()})
    model.config.problem_type = "multi_label_classification"  # two independent sigmoids
    return model, tokenizer
