"""The neural entailment families: a transformers model scores (premise window, hypothesis)
pairs: cross-encoder, seq2seq (TRUE / MiniCheck style) and causal LM (the QASemConsistency prompt)."""
from __future__ import annotations

from models.entailment.features import as_words, content_words
from models.entailment.scorers import Scorer, _ChunkingMixin

# The QASemConsistency paper's QA-verification prompt (paraphrased where the stored repository
# does not carry it verbatim): the answer is a single "Yes" / "No" token.
DEFAULT_PROMPT = (
    "ARTICLE: {premise}\n\nQA: {hypothesis}\n\n"
    "Is the QA supported by the ARTICLE? Please answer only \"Yes\" or \"No\".\nAnswer:"
)
SEQ2SEQ_TEMPLATE = "premise: {premise} hypothesis: {hypothesis}"


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


class _YesNoScorer(NeuralScorer):
    """A family that reads (chunk, hypothesis) as one text (`text`, with {premise} and {hypothesis}) and
    scores P(yes) / (P(yes) + P(no)) of two single tokens."""

    def __init__(self, model, tokenizer, text: str, **fmt):
        """fmt: the family's format fields (saved with the checkpoint), `yes` and `no` among them."""
        super().__init__(model, tokenizer, **fmt)
        self.text = text
        self.yes_id, self.no_id = _single_token_id(tokenizer, fmt["yes"]), _single_token_id(tokenizer, fmt["no"])

    def input_text(self, chunk, hyp):
        return self.text.format(premise=chunk, hypothesis=hyp)

    def _template_cost(self) -> int:
        return len(self.tokenizer(self.text.format(premise="", hypothesis=""))["input_ids"])

    def pair_lengths(self, pairs):
        return [len(x) for x in self.tokenizer([self.input_text(c, h) for c, h in pairs])["input_ids"]]

    def encode_texts(self, pairs):
        return self.tokenizer([self.input_text(c, h) for c, h in pairs], padding=True, return_tensors="pt")

    def yes_share(self, logits) -> list[float]:
        """logits [pairs, vocab] of the answer token -> P(yes) among {yes, no}."""
        two = self.torch.stack([logits[:, self.no_id], logits[:, self.yes_id]], dim=-1)
        return self.torch.softmax(two, dim=-1)[:, 1].tolist()


class Seq2SeqScorer(_YesNoScorer):
    """First decoder token: P("1") / (P("1") + P("0")). Training target "1" = supported."""
    name = family = "seq2seq"
    auto_model, peft_task = "AutoModelForSeq2SeqLM", "SEQ_2_SEQ_LM"

    def __init__(self, model, tokenizer, template: str = SEQ2SEQ_TEMPLATE, yes: str = "1", no: str = "0", **kw):
        super().__init__(model, tokenizer, template, template=template, yes=yes, no=no, **kw)

    def pair_probs(self, pairs):
        torch = self.torch
        enc = self.encode_texts(pairs)
        start = self.model.config.decoder_start_token_id
        if start is None:
            start = self.tokenizer.pad_token_id
        dec = torch.full((enc["input_ids"].shape[0], 1), int(start), dtype=torch.long)
        with torch.inference_mode():
            return self.yes_share(self.model(**enc, decoder_input_ids=dec).logits[:, 0, :].float())


class CausalLMScorer(_YesNoScorer):
    """Next token after the prompt: P("Yes") / (P("Yes") + P("No")). Left padding for batching."""
    name = family = "causal_lm"
    auto_model, peft_task = "AutoModelForCausalLM", "CAUSAL_LM"

    def __init__(self, model, tokenizer, prompt: str = DEFAULT_PROMPT, yes: str = " Yes", no: str = " No", **kw):
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        super().__init__(model, tokenizer, prompt, prompt=prompt, yes=yes, no=no, **kw)

    def _template_cost(self) -> int:
        return super()._template_cost() + 1

    def pair_probs(self, pairs):
        enc = self.encode_texts(pairs)
        with self.torch.inference_mode():
            return self.yes_share(self.model(**enc).logits[:, -1, :].float())


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
