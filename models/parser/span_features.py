"""The span parser's encoder input: the predicate markers, records -> features (a word window
around the predicate where a sentence is too long), and batches with gold span labels."""
from __future__ import annotations

from collections import Counter

import torch

from models.memory import padded_length

MARKERS = ("[unused0]", "[unused1]")


def marker_tokens(tokenizer) -> list[str]:
    """The two predicate markers: the vocabulary's unused tokens where it has them, else new ones."""
    vocab = tokenizer.get_vocab()
    return list(MARKERS) if all(m in vocab for m in MARKERS) else ["<p>", "</p>"]


def prepare_tokenizer(tokenizer, markers: list[str]):
    tokenizer.add_special_tokens({"additional_special_tokens": list(markers)},
                                 replace_extra_special_tokens=False)
    return tokenizer


class Encoder:
    """Records -> encoder features, with a word window around the predicate when the sentence does
    not fit `max_length` subwords (counted in `stats["windowed"]`, never silently cut)."""

    def __init__(self, tokenizer, markers: list[str], max_length: int, max_span_width: int):
        self.tokenizer, self.markers = tokenizer, list(markers)
        self.max_length, self.max_span_width = int(max_length), int(max_span_width)
        self.stats: Counter = Counter()

    def _window(self, costs: list[int], p: int, budget: int) -> tuple[int, int]:
        """The widest [s, e) around word p whose subword cost fits the budget (grows both ways)."""
        s, e, total = p, p + 1, costs[p]
        while True:
            grown = False
            for side in (0, 1):
                if side == 0 and s > 0 and total + costs[s - 1] <= budget:
                    s -= 1
                    total += costs[s]
                    grown = True
                elif side == 1 and e < len(costs) and total + costs[e] <= budget:
                    total += costs[e]
                    e += 1
                    grown = True
            if not grown:
                return s, e

    def encode(self, record: dict) -> dict:
        """input_ids, token_type_ids, word_index (first subword of each window word), predicate_word,
        offset (the window's first word)."""
        tokens, p = list(record["tokens"]), int(record["predicate_index"])
        if not tokens:
            raise ValueError(f"record {record.get('sentence_id')}: empty sentence")
        if not 0 <= p < len(tokens):
            raise IndexError(f"record {record.get('sentence_id')}: predicate_index {p} outside its "
                             f"{len(tokens)} tokens")
        second = [record.get("predicate_type") or "verbal", record.get("verb_form") or tokens[p]]
        tok = self.tokenizer
        pieces = [tok.tokenize(w) or [tok.unk_token] for w in tokens]
        second_ids = tok.convert_tokens_to_ids([t for w in second for t in tok.tokenize(w)])
        budget = self.max_length - 5 - len(second_ids)  # CLS, 2 markers, 2 SEP
        costs = [len(x) for x in pieces]
        s, e = (0, len(tokens)) if sum(costs) <= budget else self._window(costs, p, budget)
        if (s, e) != (0, len(tokens)):
            self.stats["windowed"] += 1
        ids, word_index = [tok.cls_token_id], []
        for k in range(s, e):
            if k == p:
                ids.append(tok.convert_tokens_to_ids(self.markers[0]))
            word_index.append(len(ids))
            ids.extend(tok.convert_tokens_to_ids(pieces[k][:budget]))  # a single word over budget: its head
            if k == p:
                ids.append(tok.convert_tokens_to_ids(self.markers[1]))
        ids.append(tok.sep_token_id)
        types = [0] * len(ids) + [1] * (len(second_ids) + 1)
        ids += second_ids + [tok.sep_token_id]
        return {"input_ids": ids, "token_type_ids": types, "word_index": word_index,
                "predicate_word": p - s, "offset": s}


def collate(features: list[dict], pad_id: int, max_span_width: int, bucket: bool = False,
            multiple: int = 0) -> dict:
    """Pad a batch; gold spans become a [B, W, w] label grid and (b, i, w) question cells. The lengths are
    padded up to a multiple of `multiple` (training: model.train_pad_multiple), or with bucket=True and no
    multiple, of QASEM_PAD_MULTIPLE (inference; models.memory.padded_length). Padding is masked: the loss
    does not change."""
    n_tok = max(len(f["input_ids"]) for f in features)
    n_words = max(len(f["word_index"]) for f in features)
    if bucket or multiple:
        n_tok, n_words = padded_length(n_tok, multiple or None), padded_length(n_words, multiple or None)
    batch = {
        "input_ids": torch.tensor([f["input_ids"] + [pad_id] * (n_tok - len(f["input_ids"])) for f in features]),
        "attention_mask": torch.tensor([[1] * len(f["input_ids"]) + [0] * (n_tok - len(f["input_ids"]))
                                        for f in features]),
        "token_type_ids": torch.tensor([f["token_type_ids"] + [0] * (n_tok - len(f["token_type_ids"]))
                                        for f in features]),
        "word_index": torch.tensor([f["word_index"] + [-1] * (n_words - len(f["word_index"])) for f in features]),
        "predicate_word": torch.tensor([f["predicate_word"] for f in features]),
    }
    if "spans" in features[0]:
        labels = torch.zeros(len(features), n_words, max_span_width)
        cells, targets = [], []
        for b, f in enumerate(features):
            for start, end, template in f["spans"]:
                labels[b, start, end - start - 1] = 1.0
                if template >= 0:
                    cells.append((b, start, end - start - 1))
                    targets.append(template)
        batch["span_labels"] = labels
        batch["question_cells"] = torch.tensor(cells, dtype=torch.long).reshape(-1, 3)
        batch["question_labels"] = torch.tensor(targets, dtype=torch.long)
    return batch
