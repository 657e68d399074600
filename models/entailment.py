"""QA-entailment scorers: premise (reference text) + hypothesis ("question answer") -> P(supported).

One class per family, all with `score(premise, hypotheses, answers=None) -> list[float]` and
`score_examples(examples)` (groups the benchmark's examples by premise):

- `MajorityScorer`: a constant (the training prior, default 1.0 = always "supported").
- `LexicalScorer`: answer-word coverage of the premise. "Supported" at 0.5 exactly when every
  answer word occurs in the reference (DESIGN.md's rule); the score keeps the coverage order
  for AUC.
- `EmbeddingScorer`: MiniLM mean-pooled cosine of the hypothesis with its best premise chunk.
- `CrossEncoderScorer`: AutoModelForSequenceClassification, (chunk, hypothesis) pairs, label 1 =
  supported.
- `Seq2SeqScorer`: T5 family, TRUE / MiniCheck style: P("1") vs P("0") as the first decoder token.
- `CausalLMScorer`: P("Yes") vs P("No") as the next token after the QASemConsistency-style prompt.
- `StackedScorer`: logistic regression over the lexical signals of models.entailment_features
  (+ the embedding similarity and a neural scorer's logit).

Long premises are split into overlapping word windows sized so that (window, hypothesis) fits the
model in subword tokens; the score is the max over windows. Nothing is silently truncated: a window
that still does not fit after encoding is split again; only a hypothesis longer than the model
itself would have to be cut, and that is counted in `scorer.stats`.

A trained checkpoint folder holds the weights, the tokenizer and `entailment_format.json`;
`load_scorer(folder)` rebuilds the scorer from it alone (models.entailment_io: save_format,
load_format, load_scorer; importable from here too).
"""
from __future__ import annotations

import logging
from collections import Counter, defaultdict
from typing import Sequence

from models.progress import progress as progress_bar
from models.entailment_features import (CONTEXT_FEATURES, STACK_FEATURES, STOPWORDS, add_context_features, as_words,
                                        content_words, lexical_features, norm_word, question_verb_key,
                                        split_hypothesis)
from models.entailment_io import FORMAT_FILE, load_format, load_scorer, load_stacked, save_format
from models.entailment_structure import SIMILARITY_FEATURES
from models.windows import budget_windows

log = logging.getLogger(__name__)

# The QASemConsistency paper's QA-verification prompt (paraphrased where the stored repository
# does not carry it verbatim): the answer is a single "Yes" / "No" token.
DEFAULT_PROMPT = (
    "ARTICLE: {premise}\n\nQA: {hypothesis}\n\n"
    "Is the QA supported by the ARTICLE? Please answer only \"Yes\" or \"No\".\nAnswer:"
)
SEQ2SEQ_TEMPLATE = "premise: {premise} hypothesis: {hypothesis}"

__all__ = [
    # scorers and their registry
    "Scorer", "MajorityScorer", "LexicalScorer", "EmbeddingScorer", "NeuralScorer", "CrossEncoderScorer",
    "Seq2SeqScorer", "CausalLMScorer", "StackedScorer", "SCORER_CLASSES", "FAMILIES", "scorer_class",
    "model_class", "DEFAULT_PROMPT", "SEQ2SEQ_TEMPLATE", "predicate_keys", "score_qas",
    # re-exported: checkpoint I/O (models.entailment_io), lexical signals (models.entailment_features)
    "FORMAT_FILE", "save_format", "load_format", "load_scorer", "load_stacked",
    "STACK_FEATURES", "STOPWORDS", "as_words", "norm_word", "content_words", "lexical_features",
    "split_hypothesis",
]


# ---------------------------------------------------------------------------- scorers
class Scorer:
    name = "base"

    def __init__(self):
        self.stats: Counter = Counter()

    def score(self, premise, hypotheses: Sequence[str], answers: Sequence[str] | None = None) -> list[float]:
        raise NotImplementedError

    def score_examples(self, examples: Sequence[dict], progress: bool = False) -> list[float]:
        """Score benchmark examples (keys premise_tokens, hypothesis, answer), one call per premise
        (progress: a bar over the premises, for an entry point's main loop)."""
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, ex in enumerate(examples):
            groups[(ex.get("response_id"), len(ex["premise_tokens"]), tuple(ex["premise_tokens"][:8]))].append(i)
        scores = [0.0] * len(examples)
        for idx in progress_bar(groups.values(), self.name, unit="premise", enabled=progress):
            premise = examples[idx[0]]["premise_tokens"]
            out = self.score(premise, [examples[i]["hypothesis"] for i in idx],
                             answers=[examples[i].get("answer", "") for i in idx])
            for i, s in zip(idx, out):
                scores[i] = float(s)
        return scores


class MajorityScorer(Scorer):
    name = "majority"

    def __init__(self, value: float = 1.0):
        super().__init__()
        self.value = float(value)

    def score(self, premise, hypotheses, answers=None):
        return [self.value] * len(hypotheses)


class LexicalScorer(Scorer):
    """Share of the answer's words found in the premise. Score 1.0 when all are found, otherwise
    coverage / 2 (< 0.5): thresholding at 0.5 is the all-words rule, AUC uses the coverage.

    mode "raw" (default, DESIGN.md's figure: 72.5 / 73.6 / 75.1 test BAcc): lower-cased
    whitespace tokens, punctuation included; "normalized": punctuation stripped, hyphenated
    words split, optionally stopwords dropped."""
    name = "lexical"

    def __init__(self, mode: str = "raw", drop_stopwords: bool = False):
        super().__init__()
        if mode not in ("raw", "normalized"):
            raise ValueError(f"lexical mode {mode!r}: expected raw or normalized")
        self.mode, self.drop_stopwords = mode, drop_stopwords

    def _words(self, text_or_tokens) -> list[str]:
        if self.mode == "raw":
            words = text_or_tokens.split() if isinstance(text_or_tokens, str) else text_or_tokens
            return [w.lower() for w in words if not (self.drop_stopwords and w.lower() in STOPWORDS)]
        return content_words(text_or_tokens, self.drop_stopwords)

    def coverage(self, premise_vocab: set[str], answer: str) -> float:
        words = self._words(answer) or content_words(answer)
        if not words:
            return 1.0
        return sum(w in premise_vocab for w in words) / len(words)

    def score(self, premise, hypotheses, answers=None):
        vocab = set(self._words(as_words(premise)))
        if answers is None:  # no separate answer: use the hypothesis minus stopwords
            answers = [" ".join(content_words(h, drop_stopwords=True)) for h in hypotheses]
        out = []
        for a in answers:
            c = self.coverage(vocab, a)
            out.append(1.0 if c >= 1.0 else 0.5 * c)
        return out


class _ChunkingMixin:
    """Fits (premise window, hypothesis) pairs into `max_length` subword tokens."""
    tokenizer = None
    max_length = 512
    chunk_words = 200
    chunk_overlap = 50
    extra_tokens = 4  # special tokens / template words around the pair

    def _template_cost(self) -> int:
        return self.extra_tokens

    def windows_for(self, words: list[str], hypotheses: Sequence[str]) -> list[tuple[int, int]]:
        tok = self.tokenizer
        hyp_cost = max((len(tok(h, add_special_tokens=False)["input_ids"]) for h in hypotheses), default=0)
        budget = self.max_length - hyp_cost - self._template_cost()
        if budget < 8:
            self.stats["hypothesis_too_long_for_model"] += 1
            budget = max(8, self.max_length // 2)
        costs = [len(x) for x in tok(words, add_special_tokens=False, is_split_into_words=False)["input_ids"]] \
            if words else []
        return budget_windows(costs, budget, self.chunk_words, self.chunk_overlap)


class EmbeddingScorer(Scorer, _ChunkingMixin):
    """Cosine of mean-pooled sentence embeddings (all-MiniLM-L6-v2), hypothesis vs best chunk.
    The cosine is clipped to [0, 1]; 0.5 is an arbitrary cut (see the dev-tuned threshold row)."""
    name = "embedding"

    def __init__(self, model_path: str | None = None, chunk_words: int = 40, chunk_overlap: int = 20,
                 max_length: int = 256, batch_size: int = 64, use_answer_only: bool = False):
        super().__init__()
        import torch
        from transformers import AutoModel, AutoTokenizer

        from models.model_paths import resolve_model_path

        model_path = resolve_model_path(model_path or "minilm")
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModel.from_pretrained(model_path).eval()
        self.torch = torch
        self.chunk_words, self.chunk_overlap = chunk_words, chunk_overlap
        self.max_length, self.batch_size = max_length, batch_size
        self.use_answer_only = use_answer_only
        self.bf16 = False  # autocast at inference (models/fast_path.py); the weights stay fp32

    def embed(self, texts: list[str], sort_by_length: bool = True):
        """Unit vectors of texts, in their order. Batches are formed from texts of similar length
        (sorted by characters), so that little of each batch is padding (2.8x the texts/s on dev QAs and
        sentences, benchmarks/embedding_batching.py; False: batches in the given order)."""
        torch = self.torch
        order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if sort_by_length else list(range(len(texts)))
        outs = []
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            for i in progress_bar(range(0, len(texts), self.batch_size), "embedder", unit="batch"):
                batch = [texts[j] for j in order[i:i + self.batch_size]]
                # verbose=False: an over-long text is counted and cut below, not warned about here
                enc = self.tokenizer(batch, padding=True, truncation=False, return_tensors="pt", verbose=False)
                if enc["input_ids"].shape[1] > self.max_length:
                    self.stats["embedding_text_over_max_length"] += 1
                    enc = self.tokenizer(batch, padding=True, truncation=True,
                                         max_length=self.tokenizer.model_max_length, return_tensors="pt")
                h = self.model(**enc).last_hidden_state.float()
                m = enc["attention_mask"].unsqueeze(-1).float()
                e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                outs.append(torch.nn.functional.normalize(e, dim=-1))
        if not outs:
            return torch.zeros(0)
        out = torch.empty(len(texts), outs[0].shape[1])
        out[torch.tensor(order)] = torch.cat(outs)
        return out

    def _template_cost(self) -> int:
        return 2

    def score(self, premise, hypotheses, answers=None):
        words = as_words(premise)
        # windows sized for the chunk alone (the hypothesis is embedded separately)
        costs = [len(x) for x in self.tokenizer(words, add_special_tokens=False)["input_ids"]] if words else []
        wins = budget_windows(costs, self.max_length - 2, self.chunk_words, self.chunk_overlap)
        chunks = [" ".join(words[s:e]) for s, e in wins]
        texts = list(answers) if (self.use_answer_only and answers is not None) else list(hypotheses)
        c = self.embed(chunks)
        h = self.embed(texts)
        sims = (h @ c.T).max(dim=1).values
        return [float(min(1.0, max(0.0, s))) for s in sims.tolist()]


class NeuralScorer(Scorer, _ChunkingMixin):
    """A transformers model scoring (premise window, hypothesis) pairs; a family subclass says how
    to measure (`pair_lengths`) and score (`pair_probs`) a batch of pairs."""
    family = "base"

    def __init__(self, model, tokenizer, max_length: int = 512, chunk_words: int = 200,
                 chunk_overlap: int = 50, batch_size: int = 16, top_k_chunks: int | None = None, **fmt):
        super().__init__()
        import torch

        self.torch = torch
        self.model, self.tokenizer = model.eval(), tokenizer
        limit = getattr(tokenizer, "model_max_length", None)
        if limit and limit < 100_000:
            max_length = min(max_length, int(limit))
        pos = getattr(model.config, "max_position_embeddings", None)
        if pos:
            max_length = min(max_length, int(pos))
        self.max_length, self.chunk_words, self.chunk_overlap = max_length, chunk_words, chunk_overlap
        self.batch_size = batch_size
        # None: every window is scored. k: only the k windows sharing the most answer / question
        # words with the hypothesis (an explicit retrieval step, recorded in the format file)
        self.top_k_chunks = top_k_chunks
        self.fmt = fmt

    # subclasses: encode a list of (chunk, hypothesis) pairs; return P(supported) for each
    def pair_probs(self, pairs: list[tuple[str, str]]) -> list[float]:
        raise NotImplementedError

    def pair_lengths(self, pairs: list[tuple[str, str]]) -> list[int]:
        raise NotImplementedError

    def score(self, premise, hypotheses, answers=None):
        words = as_words(premise)
        if not words:
            self.stats["empty_premise"] += 1
        wins = self.windows_for(words, hypotheses)
        answers = answers if answers is not None else [None] * len(hypotheses)
        pairs, owners = [], []
        for hi, h in enumerate(hypotheses):
            for s, e in self.select_windows(words, wins, h, answers[hi]):
                pairs.extend(self.split_to_fit(" ".join(words[s:e]), h))
                owners.extend([hi] * (len(pairs) - len(owners)))
        probs = []
        for i in range(0, len(pairs), self.batch_size):
            probs.extend(self.pair_probs(pairs[i:i + self.batch_size]))
        best = [0.0] * len(hypotheses)
        seen = [False] * len(hypotheses)
        for o, p in zip(owners, probs):
            best[o] = p if not seen[o] else max(best[o], p)
            seen[o] = True
        self.stats["pairs_scored"] += len(pairs)
        return best

    def select_windows(self, words, wins, hypothesis: str, answer: str | None = None):
        """All windows, or the top_k by (answer words, hypothesis words) shared with the window."""
        if not self.top_k_chunks or len(wins) <= self.top_k_chunks:
            return wins
        a = set(content_words(answer or hypothesis, drop_stopwords=True))
        q = set(content_words(hypothesis, drop_stopwords=True))

        def key(w):
            ws = set(content_words(words[w[0]:w[1]]))
            return (len(a & ws), len(q & ws))
        ranked = sorted(range(len(wins)), key=lambda i: key(wins[i]), reverse=True)[: self.top_k_chunks]
        self.stats["windows_skipped_by_top_k"] += len(wins) - len(ranked)
        return [wins[i] for i in sorted(ranked)]

    def split_to_fit(self, chunk: str, hyp: str) -> list[tuple[str, str]]:
        """The pair, or the chunk split in halves until each part fits (never truncated)."""
        if self.pair_lengths([(chunk, hyp)])[0] <= self.max_length:
            return [(chunk, hyp)]
        words = chunk.split()
        if len(words) <= 1:
            self.stats["pair_truncated"] += 1  # one word + hypothesis longer than the model
            return [(chunk, hyp)]
        self.stats["window_resplit"] += 1
        mid = len(words) // 2
        ov = min(self.chunk_overlap, mid // 2)
        return (self.split_to_fit(" ".join(words[:mid + ov]), hyp)
                + self.split_to_fit(" ".join(words[mid - ov:]), hyp))

    def format_dict(self) -> dict:
        return {"family": self.family, "max_length": self.max_length, "chunk_words": self.chunk_words,
                "chunk_overlap": self.chunk_overlap, "top_k_chunks": self.top_k_chunks, **self.fmt}


class CrossEncoderScorer(NeuralScorer):
    name = family = "cross_encoder"
    auto_model, peft_task = "AutoModelForSequenceClassification", "SEQ_CLS"

    def __init__(self, model, tokenizer, supported_label: int = 1, **kw):
        super().__init__(model, tokenizer, supported_label=supported_label, **kw)
        self.supported_label = supported_label

    def _template_cost(self) -> int:
        return self.tokenizer.num_special_tokens_to_add(pair=True)

    def encode(self, pairs, truncate=False):
        return self.tokenizer([p for p, _ in pairs], [h for _, h in pairs], padding=True,
                              truncation="only_first" if truncate else False,
                              max_length=self.max_length if truncate else None, return_tensors="pt")

    def pair_lengths(self, pairs):
        enc = self.tokenizer([p for p, _ in pairs], [h for _, h in pairs], truncation=False)
        return [len(x) for x in enc["input_ids"]]

    def pair_probs(self, pairs):
        torch = self.torch
        lengths = self.pair_lengths(pairs)
        enc = self.encode(pairs, truncate=max(lengths) > self.max_length)  # only the counted 1-word case
        with torch.inference_mode():
            logits = self.model(**enc).logits.float()
        if logits.shape[-1] == 1:
            p = torch.sigmoid(logits[:, 0])
        else:
            p = torch.softmax(logits, dim=-1)[:, self.supported_label]
        return p.tolist()


def _single_token_id(tokenizer, text: str) -> int:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError(f"tokenizer maps {text!r} to no token")
    return ids[-1] if len(ids) > 1 and tokenizer.convert_ids_to_tokens(ids[0]) in ("▁", "Ġ") else ids[0]


class Seq2SeqScorer(NeuralScorer):
    """First decoder token: P("1") / (P("1") + P("0")). Training target "1" = supported."""
    name = family = "seq2seq"
    auto_model, peft_task = "AutoModelForSeq2SeqLM", "SEQ_2_SEQ_LM"

    def __init__(self, model, tokenizer, template: str = SEQ2SEQ_TEMPLATE, yes: str = "1", no: str = "0", **kw):
        super().__init__(model, tokenizer, template=template, yes=yes, no=no, **kw)
        self.template = template
        self.yes_id, self.no_id = _single_token_id(tokenizer, yes), _single_token_id(tokenizer, no)

    def input_text(self, chunk, hyp):
        return self.template.format(premise=chunk, hypothesis=hyp)

    def _template_cost(self) -> int:
        return len(self.tokenizer(self.template.format(premise="", hypothesis=""))["input_ids"])

    def pair_lengths(self, pairs):
        return [len(x) for x in self.tokenizer([self.input_text(c, h) for c, h in pairs])["input_ids"]]

    def pair_probs(self, pairs):
        torch = self.torch
        enc = self.tokenizer([self.input_text(c, h) for c, h in pairs], padding=True, return_tensors="pt")
        start = self.model.config.decoder_start_token_id
        if start is None:
            start = self.tokenizer.pad_token_id
        dec = torch.full((enc["input_ids"].shape[0], 1), int(start), dtype=torch.long)
        with torch.inference_mode():
            logits = self.model(**enc, decoder_input_ids=dec).logits[:, 0, :].float()
        two = torch.stack([logits[:, self.no_id], logits[:, self.yes_id]], dim=-1)
        return torch.softmax(two, dim=-1)[:, 1].tolist()


class CausalLMScorer(NeuralScorer):
    """Next token after the prompt: P("Yes") / (P("Yes") + P("No")). Left padding for batching."""
    name = family = "causal_lm"
    auto_model, peft_task = "AutoModelForCausalLM", "CAUSAL_LM"

    def __init__(self, model, tokenizer, prompt: str = DEFAULT_PROMPT, yes: str = " Yes", no: str = " No", **kw):
        super().__init__(model, tokenizer, prompt=prompt, yes=yes, no=no, **kw)
        self.prompt = prompt
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        self.yes_id, self.no_id = _single_token_id(tokenizer, yes), _single_token_id(tokenizer, no)

    def input_text(self, chunk, hyp):
        return self.prompt.format(premise=chunk, hypothesis=hyp)

    def _template_cost(self) -> int:
        return len(self.tokenizer(self.prompt.format(premise="", hypothesis=""))["input_ids"]) + 1

    def pair_lengths(self, pairs):
        return [len(x) for x in self.tokenizer([self.input_text(c, h) for c, h in pairs])["input_ids"]]

    def pair_probs(self, pairs):
        torch = self.torch
        enc = self.tokenizer([self.input_text(c, h) for c, h in pairs], padding=True, return_tensors="pt")
        with torch.inference_mode():
            logits = self.model(**enc).logits[:, -1, :].float()
        two = torch.stack([logits[:, self.no_id], logits[:, self.yes_id]], dim=-1)
        return torch.softmax(two, dim=-1)[:, 1].tolist()


# A checkpoint's entailment_format.json names its family, not an import path (so saved and pushed
# checkpoints outlive a module move): this registry maps it to the scorer class, and each class
# names the transformers Auto class (and PEFT task) of its model.
SCORER_CLASSES = {cls.family: cls for cls in (CrossEncoderScorer, Seq2SeqScorer, CausalLMScorer)}
FAMILIES = tuple(SCORER_CLASSES)


def scorer_class(family: str) -> type[NeuralScorer]:
    if family not in SCORER_CLASSES:
        raise ValueError(f"unknown classifier family {family!r}; expected one of {sorted(SCORER_CLASSES)}")
    return SCORER_CLASSES[family]


def model_class(family: str):
    """The transformers Auto class that loads a `family` model."""
    import transformers

    return getattr(transformers, scorer_class(family).auto_model)


# ---------------------------------------------------------------------------- stacked (signals + LR)
def score_qas(scorer, premise, hypotheses: Sequence[str], answers: Sequence[str], keys: Sequence) -> list[float]:
    """scorer.score with each hypothesis's predicate occurrence (keys), for the scorers that read the
    other QAs of the same predicate (the stacked one's ctx_* features); the others ignore it."""
    kw = {"predicate_keys": list(keys)} if isinstance(scorer, StackedScorer) else {}
    return [float(x) for x in scorer.score(premise, list(hypotheses), answers=list(answers), **kw)]


def predicate_keys(examples: Sequence[dict]) -> list | None:
    """The predicate occurrence of each benchmark example (sentence_index, predicate_index), or
    None when the examples do not say (the scorer then reads the questions' verbs)."""
    if all("sentence_index" in e and "predicate_index" in e for e in examples):
        return [(e["sentence_index"], e["predicate_index"]) for e in examples]
    return None


class StackedScorer(Scorer):
    """Logistic regression over the lexical signals, optionally the MiniLM embedding similarity and
    a neural scorer's P(supported) (as a logit). Its folder: entailment_format.json (family
    "stacked", features, weights) and, when a neural score is used, the neural checkpoint in
    `neural/`."""
    name = family = "stacked"

    def __init__(self, features: Sequence[str], coef: Sequence[float] | None = None, intercept: float = 0.0,
                 mean: Sequence[float] | None = None, std: Sequence[float] | None = None,
                 neural: Scorer | None = None, embedding: Scorer | None = None, threshold: float | None = None,
                 structure=None):
        super().__init__()
        unknown = set(features) - set(STACK_FEATURES)
        if unknown:
            raise ValueError(f"unknown stacked features {sorted(unknown)}; known: {STACK_FEATURES}")
        self.features = list(features)
        if "neural" in self.features and neural is None:
            raise ValueError("stacked feature 'neural' needs a neural scorer")
        if "embedding" in self.features and embedding is None:
            raise ValueError("stacked feature 'embedding' needs an embedding scorer")
        if any(f.startswith("struct_") for f in self.features) and structure is None:
            raise ValueError("stacked struct_* features need the reference parser (models.entailment_structure)")
        if set(SIMILARITY_FEATURES) & set(self.features) and structure.embedder is None:
            raise ValueError("stacked struct_*_sim features need the reference structure's sentence embedder")
        self.structure = structure
        self.coef, self.intercept = list(coef or [0.0] * len(self.features)), float(intercept)
        self.mean = list(mean or [0.0] * len(self.features))
        self.std = list(std or [1.0] * len(self.features))
        self.neural, self.embedding, self.threshold = neural, embedding, threshold
        self.component_scores: dict[str, list[float]] = {}

    def feature_rows(self, premise, hypotheses, answers=None, neural_scores=None, predicates=None,
                     predicate_keys=None) -> list[list[float]]:
        """One row of self.features per hypothesis. predicate_keys: which hypotheses ask about the
        same predicate occurrence (any hashable, one per hypothesis); None: the questions' verbs."""
        import math

        words = as_words(premise)
        answers = answers if answers is not None else [None] * len(hypotheses)
        qa = [split_hypothesis(h, a) for h, a in zip(hypotheses, answers)]
        rows = [lexical_features(words, q, a, predicate=(predicates or [None] * len(hypotheses))[i])
                for i, (q, a) in enumerate(qa)]
        if set(CONTEXT_FEATURES) & set(self.features):
            keys = predicate_keys if predicate_keys is not None else [question_verb_key(q) for q, _ in qa]
            if len(keys) != len(rows):
                raise ValueError(f"{len(keys)} predicate keys for {len(rows)} hypotheses")
            add_context_features(rows, keys)
        if "embedding" in self.features:
            for r, s in zip(rows, self.embedding.score(premise, hypotheses, answers)):
                r["embedding"] = s
        if self.structure is not None:  # the reference parsed once (cached), each QA checked against its QAs
            for r, f in zip(rows, self.structure.features_many(words, [q for q, _ in qa], [a for _, a in qa])):
                r.update(f)
                # a reference without predicates, or a question that is no template: lexical features decide
                self.stats["structure_fallback_qas"] += int(f["struct_fallback"])
            for k, v in self.structure.stats.items():  # running totals of the structure (set, not added)
                self.stats[f"structure_{k}"] = v
        if "neural" in self.features:
            ns = neural_scores if neural_scores is not None else self.neural.score(premise, hypotheses, answers)
            for r, s in zip(rows, ns):
                s = min(max(s, 1e-4), 1 - 1e-4)
                r["neural"] = math.log(s / (1 - s))
        return [[r[f] for f in self.features] for r in rows]

    def probs(self, rows: list[list[float]]) -> list[float]:
        import math

        out = []
        for r in rows:
            z = self.intercept + sum(c * (x - m) / s for c, x, m, s in zip(self.coef, r, self.mean, self.std))
            out.append(1.0 / (1.0 + math.exp(-max(min(z, 50), -50))))
        return out

    def score(self, premise, hypotheses, answers=None, predicate_keys=None):
        """P(supported) of each hypothesis. Score all QAs of a text in one call: the ctx_* features
        read the other QAs of the same predicate (predicate_keys, see feature_rows)."""
        rows = self.feature_rows(premise, hypotheses, answers, predicate_keys=predicate_keys)
        # the signals' own scores, so one evaluation also reports the neural model alone
        for name in ("neural", "embedding"):
            if name in self.features:
                j = self.features.index(name)
                vals = [r[j] for r in rows]
                if name == "neural":
                    import math
                    vals = [1 / (1 + math.exp(-v)) for v in vals]
                self.component_scores.setdefault(name, []).extend(vals)
        return self.probs(rows)

    def score_examples(self, examples, progress: bool = False):
        """As Scorer.score_examples; `component_scores` ends up aligned with `examples`."""
        self.component_scores = {}
        order = []
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, ex in enumerate(examples):
            groups[(ex.get("response_id"), len(ex["premise_tokens"]), tuple(ex["premise_tokens"][:8]))].append(i)
        scores = [0.0] * len(examples)
        from models.memory import release_free_memory

        for idx in progress_bar(groups.values(), self.name, unit="premise", enabled=progress):
            out = self.score(examples[idx[0]]["premise_tokens"], [examples[i]["hypothesis"] for i in idx],
                             answers=[examples[i].get("answer", "") for i in idx],
                             predicate_keys=predicate_keys([examples[i] for i in idx]))
            release_free_memory()  # models/memory.py: RSS follows what is alive
            for i, v in zip(idx, out):
                scores[i] = float(v)
            order.extend(idx)
        for name, vals in self.component_scores.items():
            aligned = [0.0] * len(examples)
            for i, v in zip(order, vals):
                aligned[i] = v
            self.component_scores[name] = aligned
        return scores

    def format_dict(self) -> dict:
        return {"family": "stacked", "features": self.features, "coef": self.coef, "intercept": self.intercept,
                "mean": self.mean, "std": self.std, "threshold": self.threshold,
                "neural": "neural" if self.neural is not None else None,
                "embedding": self.embedding is not None,
                "structure": self.structure.paths if self.structure is not None else None}
