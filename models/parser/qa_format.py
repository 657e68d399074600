"""The QA text format: canonical record <-> (source text, target text), and back from generated text.

A `QAFormat` is plain configuration (saved as JSON next to every checkpoint, so downstream code
decodes with the format the model was trained on). Two presets reproduce the published formats:

- "klein2022" (Klein et al. 2022, kleinay/qasrl-seq2seq; reproduced from `preprocessing.py`
  (Preprocessor.extract_inputs_predicate_inline_marker, _append_verb_form,
  extract_targets_all_by_answer_ordering), the T5 constants in `run_summarization.py` /
  `pipeline.py`, and the released models' `preprocessing_kwargs.json`: source_prefix "parse: ",
  predicate_marker_type "generic", use_bilateral_predicate_marker, append_verb_form):
      parse: The student was interested in Luke 's <extra_id_10> research <extra_id_10> about sea animals . <extra_id_1> research
      -> who _ _ researched something _ _ ?<extra_id_7>Luke<extra_id_9>...   (answers split by <extra_id_3>)
  Questions are the 7 slots with "_" joined by spaces, then " ?" (the HF datasets' question lists
  joined with " "); QAs are sorted by their earliest answer. Two whitespace-only differences: their
  f-strings leave a trailing space and a double space when the predicate opens or closes the
  sentence; T5's sentencepiece normalizer drops both, so the token ids are the same.
  Their sort key is min() over "start:end" *strings* (lexicographic: "10:12" < "3:5"), an
  artifact we do not copy: "answer_position" sorts by the numeric start.
- "qasem_parser" (the QASemConsistency parser, plroit/qasem_parser; reproduced from
  `qasem_parser/argument_detection.py` @ e4d4eb9, T2TQasemArgumentParser._prepare_prompt and
  _postprocess):
      Generate QA pairs: The fox <extra_id_0>jumped<extra_id_1> over the fence
      -> who jumped?The fox<extra_id_2>where did someone jump?over the fence
  No predicate type, no verb form and no nominal-specific prefix in the source; the question
  ends at the first "?" (so "?" is the question/answer separator); answers split by
  <extra_id_3> (that commit's _ANSWER_SEPARATOR; an older commit split on ";").
  The repo holds no training code: questions are lower-cased as the parser's questions in the
  QASemConsistency data are ("who says something?"); answers keep the sentence's case and
  tokenization (its decoder tries an exact match first; DESIGN.md writes "the fox" in lower case).

Decoding never raises: `decode()` returns the well-formed QAs and counts what it dropped or could
not place. Answers are aligned to token spans by models.parser.answer_alignment.Aligner (re-exported
here), which documents its matching levels and tie-breaks and the gold round-trip figures.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from models.parser.answer_alignment import ARTIFACTS, UNK_TOKENS, Aligner
from models.parser.question_slots import (EMPTY, fallback_slots, parse_question,
                                   slots_to_question, slots_to_slot_string)

__all__ = ["QAFormat", "DecodeResult", "PRESETS", "ORDERINGS", "QUESTION_STYLES", "get_format", "load_format",
           "save_format", "prediction_record", "decode", "role_rank",
           # re-exported from models.parser.answer_alignment
           "Aligner", "ARTIFACTS", "UNK_TOKENS"]

ORDERINGS = ("answer_position", "role", "as_is")
QUESTION_STYLES = ("natural", "slots")


@dataclass
class QAFormat:
    name: str = "custom"
    # --- source
    prefix: str = ""                       # may hold "{predicate_type}" (Klein's "<predicate-type>" prefix)
    predicate_marker_open: str = "<extra_id_0>"
    predicate_marker_close: str = "<extra_id_1>"   # "" = no closing marker
    marker_spacing: bool = False           # "<m> pred <m>" (True) or "<m>pred<m>" (False)
    predicate_type_markers: dict | None = None     # {"verbal": ..., "nominal": ...} replace the open marker
    append_predicate_type: bool = False    # "... <sep> nominal"
    predicate_type_separator: str = ""
    append_verb_form: bool = False         # "... <sep> research"
    verb_form_separator: str = ""
    # --- target
    qa_separator: str = "<extra_id_2>"
    question_answer_separator: str = "?"   # "?" = the question's own question mark
    answer_separator: str = "<extra_id_3>"
    ordering: str = "answer_position"
    question_style: str = "natural"
    lowercase_question: bool = True

    def __post_init__(self):
        if self.ordering not in ORDERINGS:
            raise ValueError(f"QAFormat.ordering {self.ordering!r}: expected one of {ORDERINGS}")
        if self.question_style not in QUESTION_STYLES:
            raise ValueError(f"QAFormat.question_style {self.question_style!r}: expected one of {QUESTION_STYLES}")
        for f in ("qa_separator", "question_answer_separator", "answer_separator"):
            if not getattr(self, f):
                raise ValueError(f"QAFormat.{f} must not be empty")

    # ------------------------------------------------------------------ config I/O
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> "QAFormat":
        d = dict(d)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"QAFormat: unknown option(s) {unknown}; known: {sorted(known)}")
        if d.get("predicate_type_markers") is not None:
            d["predicate_type_markers"] = dict(d["predicate_type_markers"])
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @property
    def special_tokens(self) -> list[str]:
        """Markers and separators spelled as <...>: add them to a tokenizer that lacks them."""
        vals = [self.predicate_marker_open, self.predicate_marker_close, self.predicate_type_separator,
                self.verb_form_separator, self.qa_separator, self.question_answer_separator,
                self.answer_separator, *(self.predicate_type_markers or {}).values()]
        out = []
        for v in vals:
            if v and re.fullmatch(r"<[^<>\s]+>", v) and v not in out:
                out.append(v)
        return out

    # ------------------------------------------------------------------ encoding
    def encode_source(self, tokens: Sequence[str], predicate_index: int,
                      predicate_type: str | None = None, verb_form: str | None = None) -> str:
        open_m, close_m = self.predicate_marker_open, self.predicate_marker_close
        if self.predicate_type_markers and predicate_type in self.predicate_type_markers:
            # Klein's predicate_marker_type="pred_type": one marker per type, on both sides
            # when the marker is bilateral
            if close_m == open_m:
                close_m = self.predicate_type_markers[predicate_type]
            open_m = self.predicate_type_markers[predicate_type]
        pred = tokens[predicate_index]
        if self.marker_spacing:
            marked = " ".join(x for x in (open_m, pred, close_m) if x)
        else:
            marked = f"{open_m}{pred}{close_m}"
        words = list(tokens[:predicate_index]) + [marked] + list(tokens[predicate_index + 1:])
        if self.append_predicate_type:
            words += [x for x in (self.predicate_type_separator, predicate_type or "") if x]
        if self.append_verb_form:
            words += [x for x in (self.verb_form_separator, verb_form or pred) if x]
        prefix = self.prefix.replace("{predicate_type}", predicate_type or "")
        return prefix + " ".join(words)

    def question_text(self, qa: Mapping) -> str:
        if self.question_style == "slots":
            return slots_to_slot_string(qa["slots"])
        q = " ".join(str(qa.get("question") or "").split())
        if not q:
            q = slots_to_question(qa["slots"])
        q = q.rstrip("?").rstrip() + "?"
        if self.lowercase_question:
            q = q.lower()
        return q

    def _ordered(self, qas: Sequence[Mapping]) -> list[Mapping]:
        if self.ordering == "as_is":
            return list(qas)

        def pos(qa):
            spans = [tuple(s) for s in qa.get("answers") or []]
            return min(spans) if spans else (0, 0)
        if self.ordering == "answer_position":
            return sorted(qas, key=pos)
        return sorted(qas, key=lambda qa: (role_rank(qa), pos(qa)))

    def encode_target(self, tokens: Sequence[str], qas: Sequence[Mapping]) -> str:
        pieces = []
        for qa in self._ordered(qas):
            spans = [tuple(s) for s in qa.get("answers") or []]
            if not spans:
                continue  # nothing to write (and it would decode as malformed)
            answers = self.answer_separator.join(" ".join(tokens[s:e]) for s, e in spans)
            q = self.question_text(qa)
            if self.question_answer_separator == "?":
                pieces.append(f"{q}{answers}")  # the question's "?" is the separator
            else:
                pieces.append(f"{q}{self.question_answer_separator}{answers}")
        return self.qa_separator.join(pieces)

    def encode(self, record: Mapping) -> tuple[str, str]:
        src = self.encode_source(record["tokens"], record["predicate_index"],
                                 record.get("predicate_type"), record.get("verb_form"))
        return src, self.encode_target(record["tokens"], record.get("qas") or [])

    # ------------------------------------------------------------------ decoding
    def decode(self, text: str, tokens: Sequence[str], predicate_index: int,
               verb_form: str | None = None) -> "DecodeResult":
        return decode(self, text, tokens, predicate_index, verb_form)


def role_rank(qa: Mapping) -> int:
    """A coarse role order (R0, R1, R2, then adjuncts) for ordering="role"; not the LA mapping."""
    slots = qa.get("slots") or {}
    wh = (slots.get("wh") or "").lower()
    empty = lambda s: (slots.get(s) or EMPTY) in (EMPTY, "")
    if wh in ("who", "what"):
        if qa.get("is_passive"):
            return 1 if empty("subj") else 2
        if empty("subj"):
            return 0
        return 1 if empty("obj") else 2
    order = ("where", "when", "how", "how much", "how long", "why")
    return 3 + order.index(wh) if wh in order else 3 + len(order)


# ---------------------------------------------------------------------- presets

PRESETS: dict[str, QAFormat] = {
    "klein2022": QAFormat(
        name="klein2022", prefix="parse: ",
        predicate_marker_open="<extra_id_10>", predicate_marker_close="<extra_id_10>", marker_spacing=True,
        append_verb_form=True, verb_form_separator="<extra_id_1>",
        qa_separator="<extra_id_9>", question_answer_separator="<extra_id_7>", answer_separator="<extra_id_3>",
        ordering="answer_position", question_style="slots", lowercase_question=True),
    "qasem_parser": QAFormat(
        name="qasem_parser", prefix="Generate QA pairs: ",
        predicate_marker_open="<extra_id_0>", predicate_marker_close="<extra_id_1>", marker_spacing=False,
        qa_separator="<extra_id_2>", question_answer_separator="?", answer_separator="<extra_id_3>",
        ordering="answer_position", question_style="natural", lowercase_question=True),
}


def get_format(name_or_dict) -> QAFormat:
    """A preset by name, a QAFormat, or a dict of options (a "base" key names a preset to
    start from: {"base": "qasem_parser", "ordering": "role"})."""
    if isinstance(name_or_dict, QAFormat):
        return name_or_dict
    if isinstance(name_or_dict, str):
        if name_or_dict not in PRESETS:
            raise ValueError(f"unknown QA format {name_or_dict!r}; known formats: {sorted(PRESETS)}")
        return copy.deepcopy(PRESETS[name_or_dict])
    if isinstance(name_or_dict, Mapping) or hasattr(name_or_dict, "items"):
        d = dict(name_or_dict.items())
        base = d.pop("base", None)
        if base is not None:
            merged = get_format(base).to_dict()
            merged.update(d)
            d = merged
        return QAFormat.from_dict(d)
    raise ValueError(f"QA format must be a name, a dict or a QAFormat, not {type(name_or_dict).__name__}")


def load_format(path) -> QAFormat:
    """The format saved beside a parser checkpoint (models.parser.FORMAT_FILE)."""
    with open(path, encoding="utf-8") as f:
        return QAFormat.from_dict(json.load(f))


def save_format(fmt: QAFormat, path) -> None:
    """Write `fmt` where load_format (and QASemParser.from_pretrained) reads it back."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(fmt.to_json() + "\n")


def prediction_record(record: Mapping, decoded_qas: Sequence[Mapping]) -> dict:
    """A canonical record for the metrics: the input record's fields with the predicted QAs."""
    out = {k: copy.deepcopy(v) for k, v in record.items() if k != "qas"}
    out["qas"] = [dict(qa) for qa in decoded_qas]
    return out


# ---------------------------------------------------------------------- decoding

@dataclass
class DecodeResult:
    qas: list = field(default_factory=list)
    malformed: int = 0         # QA piece without separator, empty question, empty answer
    unaligned: int = 0         # answer string not found as a token span (dropped)
    invalid_question: int = 0  # question outside the QA-SRL template (QA kept, fallback slots)

    def counts(self) -> dict:
        return {"malformed": self.malformed, "unaligned": self.unaligned,
                "invalid_question": self.invalid_question}


_STRAY = re.compile(r"<extra_id_\d+>")  # a sentinel the model put inside an answer


def _strip_artifacts(text: str) -> str:
    for a in ARTIFACTS:
        text = text.replace(a, " ")
    return text.strip()


def _split_pieces(fmt: QAFormat, text: str):
    """Yield (question, [answer strings]) or None for a malformed piece."""
    for piece in text.split(fmt.qa_separator):
        piece = piece.strip()
        if not piece:
            continue  # empty output, or a trailing / doubled separator: nothing was said
        sep = fmt.question_answer_separator
        if sep not in piece:
            yield None, piece
            continue
        question, answers = piece.split(sep, 1)
        question = " ".join(question.split())
        if sep == "?":
            question = question + " ?" if fmt.question_style == "slots" else question + "?"
        yield question, answers.split(fmt.answer_separator)


def decode(fmt: QAFormat, text: str, tokens: Sequence[str], predicate_index: int,
           verb_form: str | None = None) -> DecodeResult:
    res = DecodeResult()
    if not isinstance(text, str):
        return res
    text = _strip_artifacts(text)
    aligner = Aligner(tokens, predicate_index)
    pending = []  # (question fields, [answer strings])
    for question, answers in _split_pieces(fmt, text):
        if question is None:
            res.malformed += 1
            continue
        if not question.strip(" ?_"):
            res.malformed += 1
            continue
        kept = [_STRAY.sub(" ", a).strip() for a in answers]
        if any(not a for a in kept):
            res.malformed += 1  # one count for the QA's empty answer(s)
        kept = [a for a in kept if a]
        if not kept:
            continue
        question = " ".join(_STRAY.sub(" ", question).split())
        parsed = parse_question(question, verb_form)
        if parsed is None:
            res.invalid_question += 1  # kept: its answers still count for UA
            fields = {"slots": fallback_slots(question, verb_form), "is_passive": False, "is_negated": False}
        else:
            fields = parsed.as_qa_fields()
        if parsed is not None and fmt.question_style == "slots":
            natural = slots_to_question(parsed.slots)
        else:  # the model's own words, as a sentence
            natural = " ".join(question.replace(" _", " ").split()).rstrip("?").rstrip() + "?"
            natural = natural[0].upper() + natural[1:]
        pending.append((natural, fields, kept))
    spans_per_qa = aligner.align_qas([answers for _, _, answers in pending],
                                     ordered=fmt.ordering == "answer_position")
    for (natural, fields, answers), spans in zip(pending, spans_per_qa):
        good = [(s, a) for s, a in zip(spans, answers) if s is not None]
        res.unaligned += len(answers) - len(good)
        seen, uniq = set(), []
        for s, a in good:
            if s not in seen:
                seen.add(s)
                uniq.append(s)
        if not uniq:
            continue
        res.qas.append({"question": natural, **fields, "answers": [list(s) for s in uniq],
                        "answer_texts": [" ".join(tokens[s:e]) for s, e in uniq]})
    return res
