"""The span-first QASem parser (after FitzGerald et al. 2018, "Large-Scale QA-SRL Parsing"): one
encoder pass per predicate scores every span of up to `max_span_width` words as an answer of the
marked predicate, keeps those above a dev-chosen threshold, and predicts one question template per
kept span. No autoregressive decoding.

Encoder input (any Hugging Face encoder): `[CLS] w1 .. [P] wp [/P] .. wn [SEP] <type> <verb form>
[SEP]`. The markers are the vocabulary's own unused tokens where it has them ([unused0/1] in BERT
vocabularies), registered as special tokens, so no embedding row starts from nothing.

Span (i, j) of the predicate p gets g_ij = S h_i + E h_j + P h_p + S' (h_i * h_p) + E' (h_j * h_p) +
W[j - i] (h: the first subword of a word), then P(answer) = sigmoid(MLP(g_ij)) and the question
template = softmax(Q(g_ij)). Training: binary cross-entropy over all candidate spans, summed per
predicate, plus cross-entropy of the gold spans' templates.

Overlapping spans are decoded greedily: most probable first, a span is kept only when it
overlaps no kept span. Gold answers of one predicate almost never overlap (2.4% of the training
predicates have any overlap), while the model gives neighbouring boundaries of one argument
similar scores; keeping both would be a false positive under the metric's one-to-one matching.
"""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import AutoConfig, AutoModel, AutoTokenizer, PretrainedConfig, PreTrainedModel

from models.progress import progress
from models.checkpoint import checkpoint_folder, read_json
from models.parser.qa_format import prediction_record
from models.parser.question_templates import realise
from models.parser.span_features import MARKERS, Encoder, collate

log = logging.getLogger(__name__)

PARSER_FILE = "parser_config.json"  # {"kind": "span"} tells the loader which parser a folder holds
KIND = "span"


class SpanParserConfig(PretrainedConfig):
    model_type = "qasem_span_parser"

    def __init__(self, encoder: dict | None = None, max_span_width: int = 20, span_hidden: int = 256,
                 dropout: float = 0.1, templates: list | None = None, inflections: dict | None = None,
                 threshold: float = 0.5, max_subwords: int = 256, markers: list | None = None, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder or {}
        self.max_span_width, self.span_hidden, self.dropout = int(max_span_width), int(span_hidden), float(dropout)
        self.templates = list(templates or [])
        self.inflections = dict(inflections or {})
        self.threshold, self.max_subwords = float(threshold), int(max_subwords)
        self.markers = list(markers or MARKERS)


class SpanParserModel(PreTrainedModel):
    config_class = SpanParserConfig
    base_model_prefix = "span_parser"
    _no_split_modules: list = []
    supports_gradient_checkpointing = True  # trainer.args.activation_checkpointing: the encoder's layers
    _keys_to_ignore_on_load_unexpected = [r"encoder\.pooler\."]  # checkpoints saved with the unused pooler

    def __init__(self, config: SpanParserConfig, encoder: nn.Module | None = None):
        super().__init__(config)
        # forward averages its own loss: the Trainer must not rescale it by the number of items
        # of the whole distributed / accumulated batch (transformers 5 does for **kwargs models).
        self.accepts_loss_kwargs = False
        if encoder is None:
            enc_cfg = dict(config.encoder)
            encoder = AutoModel.from_config(AutoConfig.for_model(enc_cfg.pop("model_type"), **enc_cfg),
                                            add_pooling_layer=False)
        if getattr(encoder, "pooler", None) is not None:
            encoder.pooler = None  # unused: it would get no gradient (DDP refuses unused weights)
        self.encoder = encoder
        h, d = encoder.config.hidden_size, config.span_hidden
        self.start, self.end, self.pred = nn.Linear(h, d), nn.Linear(h, d), nn.Linear(h, d, bias=False)
        self.start_x, self.end_x = nn.Linear(h, d, bias=False), nn.Linear(h, d, bias=False)
        self.width = nn.Embedding(config.max_span_width, d)
        self.span_mlp = nn.Sequential(nn.GELU(), nn.Dropout(config.dropout), nn.Linear(d, d), nn.GELU(),
                                      nn.Linear(d, 1))
        self.question = nn.Sequential(nn.GELU(), nn.Dropout(config.dropout), nn.Linear(d, d), nn.GELU(),
                                      nn.Linear(d, max(1, len(config.templates))))
        self.dropout = nn.Dropout(config.dropout)
        self.train_chunk_words = 0  # set by the trainer (model.train_chunk_words); 0: the whole grid at once
        self.post_init()
        # Start from the prior (about 3 answers among ~400 candidate spans), not from P = 0.5: the
        # summed BCE of 400 spans at 0.5 would swamp the first steps' gradients.
        with torch.no_grad():
            self.span_mlp[-1].bias.fill_(-5.0)

    # trainer.args.activation_checkpointing. transformers checkpoints the layers of the encoders it marks
    # (BERT / MiniLM) and refuses the others (MPNet in transformers 5 has no such layers): those get each
    # layer of encoder.encoder.layer recomputed in backward here, the same trade, without changing any
    # weight name. The flag `gradient_checkpointing` on a layer says which layers are checkpointed.
    def _plain_layers(self):
        if any(hasattr(type(m), "gradient_checkpointing") for m in self.encoder.modules()):
            return None  # transformers handles this encoder
        layers = getattr(getattr(self.encoder, "encoder", None), "layer", None)
        if layers is None:
            raise ValueError(f"activation checkpointing: {type(self.encoder).__name__} has no encoder.layer list")
        return layers

    def activation_checkpointing_enable(self, activation_checkpointing_kwargs=None, **kwargs):
        layers = self._plain_layers()
        if layers is None:
            return super().activation_checkpointing_enable(activation_checkpointing_kwargs, **kwargs)
        ckpt_kwargs = {"use_reentrant": False, **(activation_checkpointing_kwargs or {})}
        for layer in layers:
            if "forward" not in vars(layer):  # not wrapped yet: the instance's forward shadows the class's
                def recomputed(*args, _layer=layer, **kw):
                    call = type(_layer).forward.__get__(_layer)
                    if _layer.gradient_checkpointing and _layer.training and torch.is_grad_enabled():
                        return checkpoint(call, *args, **ckpt_kwargs, **kw)
                    return call(*args, **kw)
                layer.forward = recomputed
            layer.gradient_checkpointing = True

    def activation_checkpointing_disable(self):
        layers = self._plain_layers()
        if layers is None:
            return super().activation_checkpointing_disable()
        for layer in layers:
            layer.gradient_checkpointing = False

    def _init_weights(self, module):
        if module is self.encoder or any(module is m for m in self.encoder.modules()):
            return  # the encoder keeps its own (pretrained or its own init) weights
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def span_features(self, input_ids, attention_mask, word_index, predicate_word, token_type_ids=None):
        """g of every (word, width) cell: [batch, words, max_span_width, span_hidden]."""
        return self.span_grid(*self.span_parts(input_ids, attention_mask, word_index, predicate_word, token_type_ids))

    def span_parts(self, input_ids, attention_mask, word_index, predicate_word, token_type_ids=None):
        """What g is made of: the start and end terms of every word [batch, words, span_hidden] and the
        predicate's term [batch, span_hidden]; `span_grid` adds them up cell by cell."""
        # a second segment type only where the encoder has one (RoBERTa-like encoders do not)
        use_types = token_type_ids is not None and getattr(self.encoder.config, "type_vocab_size", 0) >= 2
        kw = {"token_type_ids": token_type_ids} if use_types else {}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state
        words = torch.gather(hidden, 1, word_index.clamp(min=0).unsqueeze(-1).expand(-1, -1, hidden.size(-1)))
        words = self.dropout(words)
        pred = words[torch.arange(words.size(0), device=words.device), predicate_word]  # [B, H]
        start = self.start(words) + self.start_x(words * pred[:, None])                  # [B, W, d]
        end = self.end(words) + self.end_x(words * pred[:, None])
        return start, end, self.pred(pred)

    def span_grid(self, start, end, pred, first: int = 0, last: int | None = None):
        """g of the cells of words first..last-1: [batch, words, max_span_width, span_hidden]."""
        n_words, width = start.size(1), self.config.max_span_width
        last = n_words if last is None else last
        # end index of cell (i, w) is i + w; cells past the sentence are masked by the caller
        end_idx = (torch.arange(first, last, device=start.device)[:, None]
                   + torch.arange(width, device=start.device)[None]).clamp(max=n_words - 1)
        return start[:, first:last, None] + end[:, end_idx] + pred[:, None, None] + self.width.weight[None, None]

    def _chunk_logits(self, start, end, pred, first: int, last: int):
        return self.span_mlp(self.span_grid(start, end, pred, first, last)).squeeze(-1)

    def cell_mask(self, word_index):
        """True for cells (i, w) whose span i..i+w lies inside the sentence: [B, W, w]."""
        n = (word_index >= 0).sum(-1)                                                     # [B]
        i = torch.arange(word_index.size(1), device=word_index.device)[:, None]
        w = torch.arange(self.config.max_span_width, device=word_index.device)[None]
        return (i + w)[None] < n[:, None, None]

    def forward(self, input_ids, attention_mask, word_index, predicate_word, token_type_ids=None,
                span_labels=None, question_cells=None, question_labels=None):
        parts = self.span_parts(input_ids, attention_mask, word_index, predicate_word, token_type_ids)
        chunk = self.train_chunk_words if span_labels is not None and torch.is_grad_enabled() else 0
        if chunk:  # training memory: the [B, W, w, d] grid a chunk of words at a time, recomputed in backward
            n = parts[0].size(1)
            logits = torch.cat([checkpoint(self._chunk_logits, *parts, i, min(i + chunk, n), use_reentrant=False)
                                for i in range(0, n, chunk)], 1).float()                 # [B, W, w]
        else:
            logits = self.span_mlp(self.span_grid(*parts)).squeeze(-1).float()
        mask = self.cell_mask(word_index)
        logits = logits.masked_fill(~mask, -1e4)
        out = {"span_logits": logits}
        if span_labels is not None:
            bce = nn.functional.binary_cross_entropy_with_logits(logits, span_labels.float(), reduction="none")
            loss = (bce * mask).sum() / logits.size(0)
            if question_cells is not None and question_cells.numel():
                b, i, w = question_cells.unbind(-1)
                start, end, pred = parts  # g of the gold cells alone, added up in span_grid's order
                cells = start[b, i] + end[b, (i + w).clamp(max=start.size(1) - 1)] + pred[b] + self.width.weight[w]
                q_logits = self.question(cells).float()
                loss = loss + nn.functional.cross_entropy(q_logits, question_labels, ignore_index=-100)
            out["loss"] = loss
        return out


# AutoConfig / AutoModel / AutoTokenizer recognise a span parser folder like any other model folder.
AutoConfig.register(SpanParserConfig.model_type, SpanParserConfig)
AutoModel.register(SpanParserConfig, SpanParserModel)


# ---------------------------------------------------------------------------- encoding
def decode_spans(probs, n_words: int, threshold: float) -> list[tuple[int, int, float]]:
    """Greedy non-overlapping spans above the threshold, most probable first: [(start, end, p)]."""
    cells = (probs >= threshold).nonzero().tolist()
    order = sorted(((float(probs[i, w]), i, i + w + 1) for i, w in cells if i + w < n_words), reverse=True)
    kept: list[tuple[int, int, float]] = []
    for p, s, e in order:
        if all(e <= ks or s >= ke for ks, ke, _ in kept):
            kept.append((s, e, p))
    return sorted(kept)


# ---------------------------------------------------------------------------- inference
PREDICATE_TYPES = ("verbal", "nominal")


def thresholds_of(config, override=None) -> dict[str, float]:
    """The decoding threshold per predicate type: `override` (one number for both, or a mapping
    per type), else the checkpoint's `thresholds` (chosen per type on dev), else its one
    `threshold` (checkpoints from before the per-type choice decode exactly as they did)."""
    if override is not None:
        if hasattr(override, "items"):
            out = {t: float(v) for t, v in dict(override).items()}
            unknown = set(out) - set(PREDICATE_TYPES)
            if unknown or set(out) != set(PREDICATE_TYPES):
                raise ValueError(f"threshold per type needs exactly {PREDICATE_TYPES}, got {sorted(out)}")
            return out
        return dict.fromkeys(PREDICATE_TYPES, float(override))
    saved = getattr(config, "thresholds", None)
    if saved:
        return {t: float(saved[t]) for t in PREDICATE_TYPES}
    return dict.fromkeys(PREDICATE_TYPES, float(config.threshold))


def threshold_for(record: dict, thresholds: dict[str, float]) -> float:
    return thresholds.get(record.get("predicate_type") or "verbal", thresholds["verbal"])


class SpanParser:
    """Records in, predicted records out: the same interface as the seq2seq QASemParser."""

    kind = KIND

    def __init__(self, model: SpanParserModel, tokenizer, *, batch_size: int = 64, device: str | None = None,
                 threshold: float | None = None, bf16: bool = False):
        self.model, self.tokenizer = model, tokenizer
        # bf16 autocast: 1.8x predicates/s on one AVX512-BF16 core, UA F1 within 0.1 of fp32 on dev
        self.bf16 = bool(bf16)
        self.batch_size = int(batch_size)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.device != "keep":  # "keep": a model the Trainer owns (and places) during training
            self.model.to(self.device).eval()
        self.thresholds = thresholds_of(model.config, threshold)
        c = model.config
        self.encoder = Encoder(tokenizer, c.markers, c.max_subwords, c.max_span_width)

    @classmethod
    def from_pretrained(cls, checkpoint: str | Path, **kwargs) -> "SpanParser":
        folder = checkpoint_folder(checkpoint)
        settings = read_json(folder, PARSER_FILE) or {}
        if settings.get("kind") != KIND:
            raise ValueError(f"{checkpoint}: not a span parser checkpoint ({PARSER_FILE} kind={settings.get('kind')})")
        model = SpanParserModel.from_pretrained(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        return cls(model, tokenizer, **kwargs)

    @property
    def input_limit(self) -> int:
        return self.model.config.max_subwords

    def input_lengths(self, records: list[dict]) -> list[int]:
        """Encoder input length in subwords per record, before windowing (beyond `input_limit` the
        parser reads a window around the predicate)."""
        tok = self.tokenizer
        return [5 + sum(len(tok.tokenize(w)) or 1 for w in r["tokens"])
                + len(tok.tokenize(f"{r.get('predicate_type') or 'verbal'} {r.get('verb_form') or ''}"))
                for r in records]

    @torch.no_grad()
    def span_probabilities(self, records: list[dict], min_keep: float) -> tuple[list, list, list, Counter]:
        """Per record: the P(answer) grid [words, width] (CPU), the question template of every cell
        with P >= min_keep ({(start, width): template id}), and the encoding (None for a record that
        cannot be encoded: its error is counted and the record comes back with no QAs)."""
        encs, errors = [], Counter()
        for r in records:
            try:
                encs.append(self.encoder.encode(r))
            except (ValueError, IndexError, KeyError, TypeError) as e:
                encs.append(None)
                errors[type(e).__name__] += 1
                log.warning("span parser: skipping the QAs of one record: %s", e)
        ok = [i for i, e in enumerate(encs) if e is not None]
        order = sorted(ok, key=lambda i: len(encs[i]["input_ids"]))
        probs: list = [None] * len(records)
        templates: list = [{} for _ in records]
        was_training = self.model.training
        self.model.eval()
        device = next(self.model.parameters()).device
        for b in progress(range(0, len(order), self.batch_size), "parser", unit="batch"):
            idx = order[b:b + self.batch_size]
            batch = collate([encs[i] for i in idx], self.tokenizer.pad_token_id, self.model.config.max_span_width,
                            bucket=True)
            batch = {k: v.to(device) for k, v in batch.items()}
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=self.bf16):
                g = self.model.span_features(batch["input_ids"], batch["attention_mask"], batch["word_index"],
                                             batch["predicate_word"], batch["token_type_ids"])
                logits = self.model.span_mlp(g).squeeze(-1).float()
                p = torch.sigmoid(logits.masked_fill(~self.model.cell_mask(batch["word_index"]), -1e4))
                cells = (p >= min_keep).nonzero()
                ids = self.model.question(g[cells[:, 0], cells[:, 1], cells[:, 2]]).argmax(-1).tolist() \
                    if len(cells) and self.model.config.templates else []
            if ids:
                for (row, i, w), t in zip(cells.tolist(), ids):
                    templates[idx[row]][(i, w)] = t
            p = p.cpu()
            for row, i in enumerate(idx):
                probs[i] = p[row, :len(encs[i]["word_index"])]
        self.model.train(was_training)
        return probs, templates, encs, errors

    @property
    def threshold(self) -> float:
        """One number for a caller that reads one: the common value, else the checkpoint's single one."""
        values = set(self.thresholds.values())
        return values.pop() if len(values) == 1 else float(self.model.config.threshold)

    def to_records(self, records, probs, templates, encs, threshold) -> tuple[list[dict], dict]:
        """Decode the probability grids at `threshold` (one number, or one per predicate type) into
        predicted records (spans that share a question become one QA with several answers)."""
        per_type = thresholds_of(None, threshold) if not hasattr(threshold, "items") else dict(threshold)
        c = self.model.config
        preds, counts = [], Counter(empty=0, answers=0)
        for rec, p, cells, enc in zip(records, probs, templates, encs):
            if enc is None:
                preds.append(prediction_record(rec, []))
                counts["empty"] += 1
                continue
            spans = decode_spans(p, p.size(0), threshold_for(rec, per_type))
            by_template: dict[int, list] = {}
            for s, e, prob in spans:
                t = cells.get((s, e - s - 1), -1)
                by_template.setdefault(t, []).append((s + enc["offset"], e + enc["offset"], prob))
            qas = []
            for t, answers in by_template.items():
                qa = realise(c.templates[t], rec.get("verb_form"), c.inflections) if t >= 0 else \
                    {"question": "", "slots": None, "is_passive": False, "is_negated": False}
                qa["answers"] = [[s, e] for s, e, _ in answers]
                qa["answer_texts"] = [" ".join(rec["tokens"][s:e]) for s, e, _ in answers]
                qa["answer_probabilities"] = [round(x, 4) for _, _, x in answers]
                qas.append(qa)
            qas.sort(key=lambda qa: qa["answers"][0])
            counts["empty"] += not qas
            counts["answers"] += len(spans)
            preds.append(prediction_record(rec, qas))
        return preds, dict(counts)

    def predict(self, records: list[dict], threshold=None) -> tuple[list[dict], dict]:
        """(predicted records, counts: empty / answers / windowed / invalid_input); `threshold`:
        one number or one per predicate type, default the checkpoint's."""
        threshold = self.thresholds if threshold is None else thresholds_of(None, threshold)
        before = self.encoder.stats["windowed"]
        probs, templates, encs, errors = self.span_probabilities(records, min(threshold.values()))
        preds, counts = self.to_records(records, probs, templates, encs, threshold)
        counts["windowed"] = self.encoder.stats["windowed"] - before
        counts["invalid_input"] = sum(errors.values())
        return preds, counts
