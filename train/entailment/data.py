"""Training data of the QA-entailment classifier: (premise window, hypothesis, label) triples from
the benchmark's dev half and the synthetic set, their tokenized dataset and collator (the classifier's
family encodes and pads), and the grouped cross-validation folds."""
from __future__ import annotations

import random
from collections import Counter

import hydra
from omegaconf import DictConfig

from data_prep.records import read_jsonl
from models import entailment as E
from models.entailment.features import as_words


# ---------------------------------------------------------------------------- training pairs
def best_chunk(scorer: E.NeuralScorer, premise_tokens, hypothesis: str, answer: str) -> str:
    """The premise window with the most answer (then question) word overlap: training uses one
    window per QA, inference takes the max over all windows."""
    words = as_words(premise_tokens)
    wins = scorer.windows_for(words, [hypothesis])
    if len(wins) == 1:
        return " ".join(words)
    k = scorer.top_k_chunks
    scorer.top_k_chunks = 1
    (s, e), = scorer.select_windows(words, wins, hypothesis, answer)
    scorer.top_k_chunks = k
    return " ".join(words[s:e])


def dev_triples(scorer, examples) -> list[tuple[str, str, int]]:
    return [(best_chunk(scorer, e["premise_tokens"], e["hypothesis"], e["answer"]), e["hypothesis"], e["supported"])
            for e in examples]


def synthetic_triples(cfg: DictConfig, scorer: E.NeuralScorer) -> list[tuple[str, str, int]]:
    """A seeded sample of the synthetic set, balanced as the file is; a premise window too long
    for the model is cut to its best window (as for dev), so a positive keeps its evidence."""
    rows = list(read_jsonl(hydra.utils.to_absolute_path(cfg.synthetic.file)))
    random.Random(cfg.seed).shuffle(rows)
    if cfg.synthetic.limit:
        rows = rows[: int(cfg.synthetic.limit)]
    return [(best_chunk(scorer, r["premise"].split(), r["hypothesis"], r["answer"]), r["hypothesis"], int(r["supported"]))
            for r in rows]


# ---------------------------------------------------------------------------- tokenized dataset
class PairDataset:
    """Tokenized (premise chunk, hypothesis, label) triples, encoded as the classifier's family does."""

    def __init__(self, classifier, scorer: E.NeuralScorer, triples: list[tuple[str, str, int]]):
        self.items = [classifier.encode(scorer, p, h, lab)
                      for prem, hyp, lab in triples for p, h in scorer.split_to_fit(prem, hyp)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate_fn(tokenizer, classifier):
    """Pads a batch of PairDataset items; the classifier's family pads the labels."""
    import torch

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def collate(batch):
        n = max(len(b["input_ids"]) for b in batch)
        out = {"input_ids": torch.tensor([b["input_ids"] + [pad] * (n - len(b["input_ids"])) for b in batch]),
               "attention_mask": torch.tensor([b["attention_mask"] + [0] * (n - len(b["attention_mask"])) for b in batch])}
        if "token_type_ids" in batch[0]:
            out["token_type_ids"] = torch.tensor([b["token_type_ids"] + [0] * (n - len(b["token_type_ids"])) for b in batch])
        out["labels"] = torch.tensor(classifier.pad_labels([b["labels"] for b in batch], n))
        return out

    return collate


# ---------------------------------------------------------------------------- folds
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
