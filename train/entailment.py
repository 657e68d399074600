"""Train the QA-entailment classifier on the QASemConsistency dev half.

    python -m train.entailment classifier=stacked                     # LR over lexical signals (shipped here)
    python -m train.entailment classifier=minilm stack.enabled=true   # MiniLM cross-encoder (+ LR on top)
    python -m train.entailment classifier=minilm synthetic.enabled=true  # + synthetic pre-training
    python -m train.entailment classifier=minilm synthetic.enabled=true cv.folds=0 final.train=false
                                                                      # synthetic only -> RUN/pretrained
    python -m train.entailment classifier=stacked stack.neural_fixed=RUN/pretrained  # LR + that model
    python -m train.entailment classifier=gemma2_9b_lora classifier.lora.enabled=false cv.folds=0 \
        final.train=false                                             # zero-shot descriptor folder

Model selection never looks at test: K-fold cross-validation over dev (StratifiedGroupKFold by reference
document, so no response, nor any response to the same reference, is split across folds) gives
out-of-fold predictions; their metrics are the CV estimate and their best threshold is stored in
the checkpoint. Then the model is trained on the whole dev half and saved with its
`entailment_format.json` (and, with `stack.enabled`, a logistic regression over lexical signals
+ the neural out-of-fold score is saved around it). The run dir gets all_results.json (= metrics.json)
and oof_predictions.jsonl; `hub=push hub.repo_id=ORG/NAME` pushes the shipped folder with a model card.

Resume: the same command in the same run dir (hydra.run.dir=RUN) reuses every stage a killed run
finished (synthetic pre-training, each CV fold, the final model) and trains the rest; each stage
seeds itself, so the result equals an uninterrupted run. Another configuration in that dir is refused.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import shutil
from collections import Counter
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from data_prep.consistency import read_consistency
from data_prep.records import read_jsonl
from metrics.entailment import best_threshold, metrics_table
from models import entailment as E
from models.model_paths import resolve_model_path
from transformers import set_seed

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- config checks
def check_config(cfg: DictConfig) -> None:
    """Fail before any training on an unknown family, an unloadable model or missing data."""
    fam = cfg.classifier.family
    if fam not in E.FAMILIES + ("stacked",):
        raise ValueError(f"unknown classifier family {fam!r}; expected one of {E.FAMILIES + ('stacked',)}")
    train_file = Path(hydra.utils.to_absolute_path(cfg.data.train_file))
    if not train_file.exists():
        raise FileNotFoundError(f"training data {train_file} not found (set paths.data_dir or QASEM_DATA_DIR)")
    if cfg.synthetic.enabled:
        syn = Path(hydra.utils.to_absolute_path(cfg.synthetic.file))
        if not syn.exists():
            raise FileNotFoundError(f"synthetic set {syn} not found: build it with python -m data_prep.synthetic_entailment")
    if fam == "stacked":
        return
    from transformers import AutoConfig

    if cfg.classifier.get("random_config"):
        tok = resolve_model_path(cfg.classifier.get("tokenizer") or "minilm")
        _load_tokenizer(tok)
        return
    name = resolve_model_path(cfg.classifier.model_name_or_path)
    try:
        AutoConfig.from_pretrained(name)
    except Exception as e:  # no local folder and no Hub: say so before anything runs
        raise ValueError(f"cannot load model {cfg.classifier.model_name_or_path!r} ({type(e).__name__}: {e}); "
                         "give a local folder, 'minilm', or a Hub id on a machine that reaches the Hub") from None


def _load_tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


# ---------------------------------------------------------------------------- models
def build_model(cfg: DictConfig, init_from: str | None = None):
    """(model, tokenizer) for the configured family; `init_from` = a checkpoint to continue from."""
    import torch
    from transformers import AutoConfig

    c = cfg.classifier
    cls = E.model_class(c.family)
    if init_from:
        tokenizer = _load_tokenizer(init_from)
        model = cls.from_pretrained(init_from)
    elif c.get("random_config"):
        tokenizer = _load_tokenizer(resolve_model_path(c.get("tokenizer") or "minilm"))
        rc = OmegaConf.to_container(c.random_config, resolve=True)
        mconf = AutoConfig.for_model(**rc)
        if c.family == "cross_encoder":
            mconf.num_labels = 2
        torch.manual_seed(cfg.seed)
        model = cls.from_config(mconf)
    else:
        path = resolve_model_path(c.model_name_or_path)
        tokenizer = _load_tokenizer(resolve_model_path(c.get("tokenizer")) or path)
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
    if c.get("lora", {}).get("enabled"):
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
              batch_size=cfg.eval_batch_size, top_k_chunks=c.get("top_k_chunks"))
    if c.family == "causal_lm" and c.get("prompt"):
        kw["prompt"] = c.prompt
    return E.scorer_class(c.family)(model, tokenizer, **kw)


# ---------------------------------------------------------------------------- training pairs
def best_chunk(scorer: E.NeuralScorer, premise_tokens, hypothesis: str, answer: str) -> str:
    """The premise window with the most answer (then question) word overlap: training uses one
    window per QA, inference takes the max over all windows."""
    words = E.as_words(premise_tokens)
    wins = scorer.windows_for(words, [hypothesis])
    if len(wins) == 1:
        return " ".join(words)
    k = scorer.top_k_chunks
    scorer.top_k_chunks = 1
    (s, e), = scorer.select_windows(words, wins, hypothesis, answer)
    scorer.top_k_chunks = k
    return " ".join(words[s:e])


class PairDataset:
    """Tokenized (premise chunk, hypothesis, label) triples for one family."""

    def __init__(self, scorer: E.NeuralScorer, triples: list[tuple[str, str, int]]):
        self.items = []
        tok = scorer.tokenizer
        for prem, hyp, lab in triples:
            for p, h in scorer.split_to_fit(prem, hyp):
                if scorer.family == "cross_encoder":
                    enc = tok(p, h, truncation="only_first", max_length=scorer.max_length)
                    enc["labels"] = int(lab)
                elif scorer.family == "seq2seq":
                    enc = tok(scorer.input_text(p, h), truncation=True, max_length=scorer.max_length)
                    enc["labels"] = [scorer.yes_id if lab else scorer.no_id]
                    if tok.eos_token_id is not None:
                        enc["labels"].append(tok.eos_token_id)
                else:
                    ids = tok(scorer.input_text(p, h), truncation=True, max_length=scorer.max_length - 1)["input_ids"]
                    target = scorer.yes_id if lab else scorer.no_id
                    enc = {"input_ids": ids + [target], "attention_mask": [1] * (len(ids) + 1),
                           "labels": [-100] * len(ids) + [target]}
                self.items.append(dict(enc))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate_fn(tokenizer, family: str):
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def collate(batch):
        n = max(len(b["input_ids"]) for b in batch)
        out = {"input_ids": torch.tensor([b["input_ids"] + [pad] * (n - len(b["input_ids"])) for b in batch]),
               "attention_mask": torch.tensor([b["attention_mask"] + [0] * (n - len(b["attention_mask"])) for b in batch])}
        if "token_type_ids" in batch[0]:
            out["token_type_ids"] = torch.tensor([b["token_type_ids"] + [0] * (n - len(b["token_type_ids"])) for b in batch])
        if family == "cross_encoder":
            out["labels"] = torch.tensor([b["labels"] for b in batch])
        elif family == "seq2seq":
            m = max(len(b["labels"]) for b in batch)
            out["labels"] = torch.tensor([b["labels"] + [-100] * (m - len(b["labels"])) for b in batch])
        else:
            out["labels"] = torch.tensor([b["labels"] + [-100] * (n - len(b["labels"])) for b in batch])
        return out

    return collate


def fit(cfg: DictConfig, model, tokenizer, triples, out_dir: Path, stage: dict | None = None):
    """One HF Trainer run over `triples` (no checkpoints on disk: the caller saves the model)."""
    from transformers import Trainer, TrainingArguments

    stage = stage or cfg.optim
    scorer = make_scorer(cfg, model, tokenizer)
    ds = PairDataset(scorer, triples)
    args = TrainingArguments(
        output_dir=str(out_dir), per_device_train_batch_size=stage.batch_size,
        gradient_accumulation_steps=stage.get("grad_accum", 1), learning_rate=stage.lr,
        num_train_epochs=stage.epochs, max_steps=stage.get("max_steps") or -1,
        warmup_steps=int(stage.get("warmup_ratio", 0.1) * max(1, math.ceil(len(ds) / stage.batch_size) * stage.epochs)),
        weight_decay=stage.get("weight_decay", 0.01), logging_steps=cfg.logging_steps, save_strategy="no",
        report_to=["wandb"] if cfg.logger.enabled else [], use_cpu=cfg.use_cpu, seed=cfg.seed,
        bf16=bool(cfg.get("bf16", False)), dataloader_num_workers=0, disable_tqdm=True,
        remove_unused_columns=False,
    )
    trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=collate_fn(tokenizer, cfg.classifier.family))
    result = trainer.train()
    model.eval()
    return {"train_loss": float(result.training_loss), "train_pairs": len(ds), "steps": int(result.global_step)}


def dev_triples(scorer, examples) -> list[tuple[str, str, int]]:
    return [(best_chunk(scorer, e["premise_tokens"], e["hypothesis"], e["answer"]), e["hypothesis"], e["supported"])
            for e in examples]


def synthetic_triples(cfg: DictConfig, scorer: E.NeuralScorer) -> list[tuple[str, str, int]]:
    """A seeded sample of the synthetic set, balanced as the file is; a premise window too long
    for the model is cut to its best window (as for dev), so a positive keeps its evidence."""
    rows = list(read_jsonl(hydra.utils.to_absolute_path(cfg.synthetic.file)))
    random.Random(cfg.seed).shuffle(rows)
    if cfg.synthetic.get("limit"):
        rows = rows[: int(cfg.synthetic.limit)]
    return [(best_chunk(scorer, r["premise"].split(), r["hypothesis"], r["answer"]), r["hypothesis"], int(r["supported"]))
            for r in rows]


# ---------------------------------------------------------------------------- CV + final model
def group_folds(examples, k: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """k folds that keep each reference document (group_id) whole, with the supported share of
    each fold close to dev's (scikit-learn's StratifiedGroupKFold, groups shuffled by `seed`)."""
    from sklearn.model_selection import StratifiedGroupKFold

    groups = [e["group_id"] for e in examples]
    labels = [int(e["supported"]) for e in examples]
    # no more folds than groups, nor than the larger class has members (sklearn refuses that)
    k = min(k, len(set(groups)), max(Counter(labels).values(), default=0))
    if k < 2:
        return []
    sgkf = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(tr.tolist(), te.tolist()) for tr, te in sgkf.split(examples, labels, groups)]


def neural_scores(cfg, model, tokenizer, examples) -> list[float]:
    return make_scorer(cfg, model, tokenizer).score_examples(examples)


# ---------------------------------------------------------------------------- resume
# One resume rule: the same command in the same run dir reuses every stage an earlier (killed)
# run finished (synthetic pre-training, each CV fold, the final model). A stage counts as finished
# only once its marker file is written, after everything else of it.
STAGE_FILE = "stage_done.json"
VOLATILE_KEYS = ("output_dir", "logger", "hub")


def _finished(folder: Path) -> dict | None:
    path = Path(folder) / STAGE_FILE
    return json.loads(path.read_text()) if path.exists() else None


def _finish(folder: Path, info: dict) -> dict:
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / STAGE_FILE).write_text(json.dumps(info))
    return info


def check_resume(cfg: DictConfig, run_dir: Path) -> None:
    """Stages of a run dir are reused only by the same configuration: another one is an error."""
    from omegaconf import OmegaConf

    conf = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items() if k not in VOLATILE_KEYS}
    key = hashlib.sha256(json.dumps(conf, sort_keys=True, default=str).encode()).hexdigest()[:16]
    path = run_dir / "resume_key.json"
    if path.exists() and json.loads(path.read_text())["config"] != key:
        raise ValueError(f"{run_dir} holds the stages of a train.entailment run with another configuration; "
                         "use a new hydra.run.dir (or delete that one) to start over")
    if path.exists():
        log.info("resuming in %s: finished stages are reused", run_dir)
    path.write_text(json.dumps({"config": key}))


def run_neural(cfg: DictConfig, examples: list[dict], run_dir: Path) -> dict:
    info: dict = {}
    init = None
    if cfg.synthetic.enabled:
        init = str(run_dir / "pretrained")
        info["synthetic"] = _finished(run_dir / "pretrained")
        if info["synthetic"] is None:
            log.info("pre-training on the synthetic set %s", cfg.synthetic.file)
            set_seed(cfg.seed)
            model, tok = build_model(cfg)
            triples = synthetic_triples(cfg, make_scorer(cfg, model, tok))
            stats = fit(cfg, model, tok, triples, run_dir / "tmp", cfg.synthetic.optim)
            model.save_pretrained(init)
            tok.save_pretrained(init)
            # a complete checkpoint on its own (scored zero-shot on the benchmark, or as a stacked feature)
            fmt = make_scorer(cfg, model, tok).format_dict()
            fmt.update(threshold=None, trained_on="synthetic QA-SRL/QANom entailment set only")
            E.save_format(init, fmt)
            info["synthetic"] = _finish(run_dir / "pretrained", {**stats, "pretrained_dir": init})

    oof = [None] * len(examples)
    folds = group_folds(examples, cfg.cv.folds, cfg.seed) if cfg.cv.folds else []
    for fi, (tr, te) in enumerate(folds):
        if cfg.cv.get("max_folds") and fi >= cfg.cv.max_folds:
            break
        te = [int(i) for i in te]
        fold_dir = run_dir / "folds" / f"fold-{fi}"
        done_fold = _finished(fold_dir)
        if done_fold is None or done_fold["test"] != te:
            set_seed(cfg.seed + 1 + fi)  # each stage seeds itself, so a resumed run trains it identically
            model, tok = build_model(cfg, init)
            sc = make_scorer(cfg, model, tok)
            stats = fit(cfg, model, tok, dev_triples(sc, [examples[i] for i in tr]), run_dir / "tmp")
            scores = neural_scores(cfg, model, tok, [examples[i] for i in te])
            done_fold = _finish(fold_dir, {"test": te, "scores": scores, "stats": stats})
            log.info("fold %d/%d: trained on %d QAs (%s), scored %d", fi + 1, len(folds), len(tr), stats, len(te))
        for i, s in zip(te, done_fold["scores"]):
            oof[i] = s
    done = [i for i, s in enumerate(oof) if s is not None]
    if done:
        sub = [examples[i] for i in done]
        scores = [oof[i] for i in done]
        thr = best_threshold([e["supported"] for e in sub], scores)
        info["cv"] = {"folds": len(folds), "n": len(done), "threshold": thr,
                      "at_0.5": metrics_table([e["dataset"] for e in sub], [e["supported"] for e in sub], scores),
                      "at_threshold": metrics_table([e["dataset"] for e in sub], [e["supported"] for e in sub], scores, thr)}
    info["oof_scores"] = oof
    if done:  # kept so that a stacker can be refit later without retraining
        from data_prep.records import write_jsonl
        write_jsonl(run_dir / "oof_predictions.jsonl",
                    ({"example_id": e["example_id"], "dataset": e["dataset"], "supported": e["supported"],
                      "score": s} for e, s in zip(examples, oof) if s is not None))

    final_done = _finished(run_dir / "checkpoint") if cfg.final.train else None
    if final_done is not None:
        info["final"] = final_done
        info["checkpoint"] = str(run_dir / "checkpoint")
    elif cfg.final.train:
        set_seed(cfg.seed + 1 + len(folds))
        model, tok = build_model(cfg, init)
        sc = make_scorer(cfg, model, tok)
        info["final"] = fit(cfg, model, tok, dev_triples(sc, examples), run_dir / "tmp")
        ckpt = run_dir / "checkpoint"
        lora = bool(cfg.classifier.get("lora", {}).get("enabled"))
        if lora and (cfg.classifier.get("random_config") or cfg.classifier.lora.get("merge", False)):
            model = model.merge_and_unload()  # no base model to load an adapter onto: save it whole
            lora = False
        model.save_pretrained(ckpt)
        tok.save_pretrained(ckpt)
        fmt = make_scorer(cfg, model, tok).format_dict()
        fmt["threshold"] = info.get("cv", {}).get("threshold")
        fmt["trained_on"] = "qasem-consistency dev" + (" after synthetic pre-training" if init else "")
        if lora:  # an adapter folder: load_scorer puts it on the base model again
            fmt["base_model"] = resolve_model_path(cfg.classifier.model_name_or_path)
        E.save_format(ckpt, fmt)
        _finish(ckpt, info["final"])
        info["checkpoint"] = str(ckpt)
    elif init is None and not folds:
        # zero-shot: no training at all; the checkpoint is a descriptor naming the base model
        model, tok = build_model(cfg)
        ckpt = run_dir / "checkpoint"
        tok.save_pretrained(ckpt)
        fmt = make_scorer(cfg, model, tok).format_dict()
        fmt.update(threshold=None, trained_on="nothing (zero-shot)",
                   base_model=resolve_model_path(cfg.classifier.model_name_or_path))
        if cfg.classifier.get("random_config"):
            model.save_pretrained(ckpt)  # a random model has no name to load it by
            fmt.pop("base_model")
        E.save_format(ckpt, fmt)
        info["checkpoint"] = str(ckpt)
    shutil.rmtree(run_dir / "tmp", ignore_errors=True)
    return info


def fit_stacker(cfg: DictConfig, examples, oof_neural: list[float] | None, run_dir: Path,
                neural_dir: Path | None) -> dict:
    """Logistic regression over lexical signals (+ the neural out-of-fold score), evaluated by the
    same grouped CV, then fitted on all dev and saved as a `stacked` checkpoint."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    feats = list(cfg.stack.features)
    if oof_neural is not None and "neural" not in feats:
        feats.append("neural")
    if oof_neural is None:
        feats = [f for f in feats if f != "neural"]
    emb = E.EmbeddingScorer() if "embedding" in feats else None
    stacker = E.StackedScorer([f for f in feats], embedding=emb,
                              neural=E.MajorityScorer() if "neural" in feats else None)
    X = [None] * len(examples)
    by_prem: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        by_prem.setdefault(e["response_id"], []).append(i)
    for idx in by_prem.values():
        e0 = examples[idx[0]]
        rows = stacker.feature_rows(e0["premise_tokens"], [examples[i]["hypothesis"] for i in idx],
                                    [examples[i]["answer"] for i in idx],
                                    neural_scores=[oof_neural[i] for i in idx] if oof_neural is not None else None)
        for i, r in zip(idx, rows):
            X[i] = r
    X = np.asarray(X, dtype=float)
    y = np.asarray([e["supported"] for e in examples])
    mean, std = X.mean(0), X.std(0) + 1e-6
    Z = (X - mean) / std
    C = float(cfg.stack.C)
    oof = np.zeros(len(y))
    for tr, te in group_folds(examples, cfg.cv.folds or 5, cfg.seed):
        lr = LogisticRegression(C=C, class_weight="balanced", max_iter=2000).fit(Z[tr], y[tr])
        oof[te] = lr.predict_proba(Z[te])[:, 1]
    thr = best_threshold(y.tolist(), oof.tolist())
    ds = [e["dataset"] for e in examples]
    info = {"features": feats, "C": C, "threshold": thr,
            "cv": {"at_0.5": metrics_table(ds, y.tolist(), oof.tolist()),
                   "at_threshold": metrics_table(ds, y.tolist(), oof.tolist(), thr)}}
    lr = LogisticRegression(C=C, class_weight="balanced", max_iter=2000).fit(Z, y)
    out = run_dir / "stacked"
    out.mkdir(parents=True, exist_ok=True)
    fmt = {"family": "stacked", "features": feats, "coef": lr.coef_[0].tolist(),
           "intercept": float(lr.intercept_[0]), "mean": mean.tolist(), "std": std.tolist(),
           "threshold": thr, "neural": "neural" if oof_neural is not None else None,
           "embedding": emb is not None}
    if oof_neural is not None and neural_dir is not None:
        shutil.copytree(neural_dir, out / "neural", dirs_exist_ok=True)
    E.save_format(out, fmt)
    info["checkpoint"] = str(out)
    info["weights"] = dict(zip(feats, fmt["coef"]))
    return info


def load_neural_run(run: str, examples: list[dict]) -> tuple[list[float], Path]:
    """A finished neural run's out-of-fold dev scores and checkpoint, to refit a stacker on them."""
    run_dir = Path(hydra.utils.to_absolute_path(str(run)))
    oof_file, ckpt = run_dir / "oof_predictions.jsonl", run_dir / "checkpoint"
    if not oof_file.exists() or not (ckpt / E.FORMAT_FILE).exists():
        raise FileNotFoundError(f"{run_dir}: needs oof_predictions.jsonl and checkpoint/ from a neural train.entailment run")
    by_id = {r["example_id"]: r["score"] for r in read_jsonl(oof_file)}
    missing = [e["example_id"] for e in examples if e["example_id"] not in by_id]
    if missing:
        raise ValueError(f"{oof_file}: no out-of-fold score for {len(missing)} examples (e.g. {missing[0]})")
    return [by_id[e["example_id"]] for e in examples], ckpt


def train(cfg: DictConfig, run_dir: str | Path | None = None) -> dict:
    """Train (CV + final model) and return the metrics dict also written to all_results.json."""
    check_config(cfg)
    run_dir = Path(run_dir or cfg.get("output_dir") or ".")
    run_dir.mkdir(parents=True, exist_ok=True)
    check_resume(cfg, run_dir)
    set_seed(cfg.seed)
    examples, skipped = read_consistency(hydra.utils.to_absolute_path(cfg.data.train_file), "dev")
    if cfg.data.get("limit"):
        examples = examples[: int(cfg.data.limit)]
    if not examples:
        raise ValueError(f"{cfg.data.train_file}: no usable examples (skipped {dict(skipped)})")
    from common.tracking import init_wandb

    run = init_wandb(cfg, "train-entailment", str(run_dir), name=f"entailment-{cfg.classifier.name}")
    metrics: dict = {"classifier": cfg.classifier.name, "family": cfg.classifier.family,
                     "train_examples": len(examples), "skipped": dict(skipped)}
    oof, neural_dir = None, None
    if cfg.classifier.family != "stacked":
        info = run_neural(cfg, examples, run_dir)
        oof = info.pop("oof_scores")
        if any(s is None for s in oof):
            oof = None
        metrics.update(info)
        neural_dir = Path(info["checkpoint"]) if "checkpoint" in info else None
    if cfg.classifier.family == "stacked" and cfg.stack.get("neural_fixed"):
        # a neural checkpoint that never saw dev (e.g. synthetic-only): its dev scores are honest
        # features for the stacker's cross-validation as they are
        neural_dir = Path(hydra.utils.to_absolute_path(str(cfg.stack.neural_fixed)))
        oof = E.load_scorer(neural_dir, batch_size=cfg.eval_batch_size).score_examples(examples, progress=True)
        metrics["neural_fixed"] = str(neural_dir)
        metrics["neural_fixed_dev"] = metrics_table([e["dataset"] for e in examples],
                                                    [e["supported"] for e in examples], oof)
    elif cfg.classifier.family == "stacked" and cfg.stack.get("neural_from"):
        oof, neural_dir = load_neural_run(cfg.stack.neural_from, examples)
        metrics["neural_from"] = str(neural_dir)
    if cfg.classifier.family == "stacked" or cfg.stack.enabled:
        metrics["stacked"] = fit_stacker(cfg, examples, oof, run_dir, neural_dir)
    (run_dir / "all_results.json").write_text(json.dumps(metrics, indent=1))
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    if run is not None:
        flat = {}
        for key in ("cv",):
            if key in metrics:
                for sub, row in metrics[key]["at_0.5"].items():
                    flat[f"cv/{sub}/bacc"], flat[f"cv/{sub}/auc"] = row["bacc"], row["auc"]
        if "stacked" in metrics:
            for sub, row in metrics["stacked"]["cv"]["at_0.5"].items():
                flat[f"cv_stacked/{sub}/bacc"], flat[f"cv_stacked/{sub}/auc"] = row["bacc"], row["auc"]
        run.summary.update(flat)
        run.finish()
    if cfg.hub.push:
        publish(cfg, metrics, run_dir)
    return metrics


def publish(cfg: DictConfig, metrics: dict, run_dir: Path) -> None:
    from common.hub import push_folder, write_model_card

    folder = Path(metrics.get("stacked", {}).get("checkpoint") or metrics.get("checkpoint"))
    cv = metrics.get("stacked", {}).get("cv") or metrics.get("cv") or {}
    results = [{"task_type": "text-classification", "dataset_type": "qasem-consistency",
                "dataset_name": f"QASemConsistency {sub} (dev CV)", "dataset_split": "dev",
                "metric_type": m, "metric_name": f"{m.upper()} ({sub})", "value": row[m]}
               for sub, row in cv.get("at_0.5", {}).items() for m in ("bacc", "auc") if row.get(m) is not None]
    write_model_card(folder, model_name=f"qasem-entailment-{cfg.classifier.name}",
                     description="QA-entailment classifier: premise = reference, hypothesis = QASem question + answer; "
                                 "outputs P(supported). Load with models.entailment.load_scorer(folder).",
                     results=results, datasets=["ariecattan/qasem_consistency"],
                     command=f"python -m train.entailment classifier={cfg.classifier.name}",
                     base_model=cfg.classifier.get("model_name_or_path") if cfg.classifier.get("model_name_or_path") not in (None, "minilm") else None,
                     tags=["qasem", "factual-consistency"])
    push_folder(folder, cfg.hub.repo_id, private=cfg.hub.get("private", True))


def _brief(table: dict) -> dict:
    return {k: None if v["bacc"] is None else round(v["bacc"], 3) for k, v in table.items()}


@hydra.main(version_base="1.3", config_path="../conf", config_name="train_entailment")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    metrics = train(cfg, HydraConfig.get().runtime.output_dir)
    for key in ("cv",):
        if key in metrics:
            log.info("CV (dev, out-of-fold) at 0.5: %s", _brief(metrics[key]["at_0.5"]))
    if "stacked" in metrics:
        log.info("stacked CV at 0.5: %s", _brief(metrics["stacked"]["cv"]["at_0.5"]))


if __name__ == "__main__":
    main()
