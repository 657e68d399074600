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
- `StackedScorer`: logistic regression over the lexical signals of models.entailment.features
  (+ the embedding similarity and a neural scorer's logit).

Long premises are split into overlapping word windows sized so that (window, hypothesis) fits the
model in subword tokens; the score is the max over windows. Nothing is silently truncated: a window
that still does not fit after encoding is split again; only a hypothesis longer than the model
itself would have to be cut, and that is counted in `scorer.stats`.

A trained checkpoint folder holds the weights, the tokenizer and `entailment_format.json`;
`load_scorer(folder)` rebuilds the scorer from it alone (models.entailment.io).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Sequence

from models.progress import progress as progress_bar
from models.memory import pad_multiple
from models.entailment.features import STOPWORDS, as_words, content_words
from models.windows import budget_windows
from models.model_paths import resolve_model_path


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
        scores = [0.0] * len(examples)
        for idx in progress_bar(premise_groups(examples), self.name, unit="premise", enabled=progress):
            for i, s in zip(idx, self.score_group([examples[i] for i in idx])):
                scores[i] = float(s)
        return scores

    def score_group(self, group: list[dict]) -> list[float]:
        """The examples of one premise, in one call."""
        return self.score(group[0]["premise_tokens"], [e["hypothesis"] for e in group],
                          answers=[e.get("answer", "") for e in group])


def premise_groups(examples: Sequence[dict]) -> list[list[int]]:
    """The indices of the examples of each premise (a response's reference), in first-seen order."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, ex in enumerate(examples):
        groups[(ex.get("response_id"), len(ex["premise_tokens"]), tuple(ex["premise_tokens"][:8]))].append(i)
    return list(groups.values())


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


# the sentence-transformers modules (by class name: the package has moved them between versions) that plain mean
# pooling of the encoder, made unit length, reproduces
MEAN_POOLING_MODULES = {"Transformer", "Pooling", "Normalize"}


def has_sentence_head(model_path: str) -> bool:
    """Whether a sentence-transformers folder has modules beyond mean pooling (EmbeddingGemma's two dense
    layers), so that it must run through sentence-transformers to give its own embeddings."""
    import json
    from pathlib import Path

    modules = Path(model_path) / "modules.json"
    if not modules.is_file():
        return False
    try:
        types = {m["type"].rsplit(".", 1)[-1] for m in json.loads(modules.read_text())}
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{modules}: not a sentence-transformers module list ({e})") from None
    return bool(types - MEAN_POOLING_MODULES)


def similarity_prompt(model) -> str | None:
    """The prompt a model was trained with for symmetric similarity (EmbeddingGemma: "task: sentence
    similarity | query: "): the features compare QAs with QAs and words with words, both sides alike."""
    prompts = getattr(model, "prompts", None) or {}
    return prompts.get("STS") or prompts.get("PairClassification")


class EmbeddingScorer(Scorer, _ChunkingMixin):
    """Cosine of mean-pooled sentence embeddings (all-MiniLM-L6-v2), hypothesis vs best chunk.
    The cosine is clipped to [0, 1]; 0.5 is an arbitrary cut (see the dev-tuned threshold row)."""
    name = "embedding"

    def __init__(self, model_path: str | None = None, chunk_words: int = 40, chunk_overlap: int = 20,
                 max_length: int = 256, batch_size: int = 64, use_answer_only: bool = False):
        super().__init__()
        import torch
        from transformers import AutoModel, AutoTokenizer


        model_path = resolve_model_path(model_path or "minilm")
        self.torch = torch
        self.sentence_model, self.prompt = None, None
        if has_sentence_head(model_path):  # EmbeddingGemma: mean pooling, then two dense layers and a task prompt
            from sentence_transformers import SentenceTransformer

            self.sentence_model = SentenceTransformer(model_path, device="cpu")
            self.sentence_model.max_seq_length = max_length
            self.prompt = similarity_prompt(self.sentence_model)
            self.tokenizer, self.model = self.sentence_model.tokenizer, self.sentence_model
        else:  # MiniLM, MPNet: mean pooling of the encoder is the whole sentence model
            self.tokenizer = AutoTokenizer.from_pretrained(model_path)
            self.model = AutoModel.from_pretrained(model_path).eval()
        self.chunk_words, self.chunk_overlap = chunk_words, chunk_overlap
        self.max_length, self.batch_size = max_length, batch_size
        self.use_answer_only = use_answer_only
        self.bf16 = False  # autocast at inference (models/fast_path.py); the weights stay fp32

    def embed(self, texts: list[str], sort_by_length: bool = True):
        """Unit vectors of texts, in their order. Batches are formed from texts of similar length
        (sorted by characters), so that little of each batch is padding (2.8x the texts/s on dev QAs and
        sentences, benchmarks/embedding_batching.py; False: batches in the given order)."""
        torch = self.torch
        if self.sentence_model is not None:
            if not texts:
                return torch.zeros(0)
            with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
                # the model sorts by length itself; its own Normalize module makes unit vectors
                out = self.sentence_model.encode(list(texts), prompt=self.prompt, batch_size=self.batch_size,
                                                 convert_to_tensor=True, show_progress_bar=False)
            return out.float().cpu()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if sort_by_length else list(range(len(texts)))
        outs = []
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            for i in progress_bar(range(0, len(texts), self.batch_size), "embedder", unit="batch"):
                batch = [texts[j] for j in order[i:i + self.batch_size]]
                # verbose=False: an over-long text is counted and cut below, not warned about here
                enc = self.tokenizer(batch, padding=True, truncation=False, return_tensors="pt", verbose=False,
                                     pad_to_multiple_of=pad_multiple())
                if enc["input_ids"].shape[1] > self.max_length:
                    self.stats["embedding_text_over_max_length"] += 1
                    enc = self.tokenizer(batch, padding=True, truncation=True, pad_to_multiple_of=pad_multiple(),
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
