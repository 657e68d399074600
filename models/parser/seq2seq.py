"""The seq2seq QASem parser at inference time: records (or raw sentences with a predicate) in, predicted
records out. Loads a checkpoint folder or Hub id that carries `qa_format.json`."""
from __future__ import annotations

import logging
from pathlib import Path

import torch
from transformers import LogitsProcessorList

from models.progress import progress
from models.parser.answer_copy import AnswerCopyProcessor, SentenceIndex
from models.checkpoint import checkpoint_folder, read_json
from models.parser.qa_format import QAFormat, get_format, prediction_record
from models.parser.seq2seq_model import load_model

log = logging.getLogger(__name__)

FORMAT_FILE = "qa_format.json"
PARSER_FILE = "parser_config.json"


class QASemParser:
    kind = "seq2seq"

    def __init__(self, model, tokenizer, fmt: QAFormat, *, batch_size: int = 32, constrained: bool = True,
                 max_source_length: int = 256, device: str | None = None):
        self.model, self.tokenizer, self.fmt = model, tokenizer, fmt
        self.batch_size, self.max_source_length = batch_size, max_source_length
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.device != "keep":  # "keep": a model the Trainer owns (and places) during training
            self.model.to(self.device).eval()
        self.constrained = constrained and self._separator_ids() is not None
        gen = self.model.generation_config
        if gen.max_new_tokens is not None:
            gen.max_length = None  # the default max_length=20 beside max_new_tokens warns on every call

    @classmethod
    def from_pretrained(cls, checkpoint: str | Path, **kwargs) -> "QASemParser":
        checkpoint = checkpoint_folder(checkpoint)
        fmt_dict = read_json(checkpoint, FORMAT_FILE)
        if fmt_dict is None:
            raise FileNotFoundError(f"checkpoint {checkpoint} has no {FORMAT_FILE}: cannot tell how to "
                                    "decode its output (was it saved by train.parser?)")
        settings = read_json(checkpoint, PARSER_FILE) or {}
        for k in ("constrained", "max_source_length"):
            if k in settings:
                kwargs.setdefault(k, settings[k])
        model, tokenizer = load_model(checkpoint)
        return cls(model, tokenizer, get_format(fmt_dict), **kwargs)

    def _separator_ids(self):
        """Single token ids of the format's separators, or None when one spans several tokens."""
        def one(text):
            ids = self.tokenizer.convert_tokens_to_ids(text) if text.startswith("<") else None
            if ids is None or ids == self.tokenizer.unk_token_id:
                enc = self.tokenizer(text, add_special_tokens=False)["input_ids"]
                ids = enc[0] if len(enc) == 1 else None
            return ids
        qa_ans, ans, qa = (one(self.fmt.question_answer_separator), one(self.fmt.answer_separator),
                           one(self.fmt.qa_separator))
        if None in (qa_ans, ans, qa):
            log.warning("answer-copy constraint off: a separator of format %s is not one token", self.fmt.name)
            return None
        return qa_ans, ans, qa

    @property
    def input_limit(self) -> int:
        return self.max_source_length

    def input_lengths(self, records: list[dict]) -> list[int]:
        """Source length in tokens per record (beyond `input_limit` the source is cut)."""
        return [len(ids) for ids in self.tokenizer(self.sources(records), add_special_tokens=True)["input_ids"]]

    def sources(self, records: list[dict]) -> list[str]:
        return [self.fmt.encode_source(r["tokens"], r["predicate_index"], r.get("predicate_type"),
                                       r.get("verb_form")) for r in records]

    def logits_processor(self, records: list[dict], num_beams: int) -> LogitsProcessorList | None:
        if not self.constrained:
            return None
        qa_ans, ans, qa = self._separator_ids()
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos])
        sentences = [SentenceIndex.from_tokens(self.tokenizer, r["tokens"]) for r in records]
        return LogitsProcessorList([AnswerCopyProcessor(sentences, num_beams, {qa_ans, ans},
                                                        {ans, qa} | eos_ids, {qa} | eos_ids)])

    @torch.no_grad()
    def generate_texts(self, records: list[dict]) -> list[str]:
        """Generated target text per record, batched by source length (less padding)."""
        sources = self.sources(records)
        order = sorted(range(len(records)), key=lambda i: len(sources[i]))
        texts: list[str] = [""] * len(records)
        num_beams = self.model.generation_config.num_beams or 1
        for b in progress(range(0, len(order), self.batch_size), "parser", unit="batch"):
            idx = order[b:b + self.batch_size]
            enc = self.tokenizer([sources[i] for i in idx], return_tensors="pt", padding=True,
                                 truncation=True, max_length=self.max_source_length).to(self.device)
            out = self.model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                      logits_processor=self.logits_processor([records[i] for i in idx], num_beams))
            # markers are special tokens and must survive decoding; the batch's padding must not
            pad = self.tokenizer.pad_token
            for i, text in zip(idx, self.tokenizer.batch_decode(out, skip_special_tokens=False)):
                texts[i] = " ".join(w for w in text.replace(pad, " ").split(" ") if w) if pad else text
        return texts

    def decode(self, records: list[dict], texts: list[str]) -> tuple[list[dict], dict]:
        return decode_texts(self.fmt, records, texts)

    def predict(self, records: list[dict]) -> tuple[list[dict], dict]:
        """(predicted records, decode counts: malformed / unaligned / invalid_question)."""
        return self.decode(records, self.generate_texts(records))


def decode_texts(fmt: QAFormat, records: list[dict], texts: list[str]) -> tuple[list[dict], dict]:
    preds, counts = [], {"malformed": 0, "unaligned": 0, "invalid_question": 0, "empty": 0}
    for rec, text in zip(records, texts):
        res = fmt.decode(text, rec["tokens"], rec["predicate_index"], rec.get("verb_form"))
        for k, v in res.counts().items():
            counts[k] += v
        counts["empty"] += not res.qas
        pred = prediction_record(rec, res.qas)
        pred["generated"] = text
        pred["decode"] = res.counts()
        preds.append(pred)
    return preds, counts
