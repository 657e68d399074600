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
not place. Answers are aligned to token spans: exact token match, then case-insensitive, then
ignoring whitespace / case / accents / quote and bracket spellings (<unk> as a wildcard), then a
truncated last word snapped to its token. Among several hits: the answers of one QA take distinct
spans; an answer avoids nesting in another answer; with ordering="answer_position" the QAs'
earliest answers must not decrease in the order written; then the nearest to the predicate.
Gold round trip (gold -> text -> decode, UA F1, qanom protocol; both presets): QA-SRL GS test
0.9998, QANom test 0.9987 (nearest-to-predicate alone: 0.9952 / 0.9903). What remains is the same
word repeated ("I", "he") with nothing in the text to tell the mentions apart.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from models.question_slots import (EMPTY, fallback_slots, parse_question,
                                   slots_to_question, slots_to_slot_string)

ORDERINGS = ("answer_position", "role", "as_is")
QUESTION_STYLES = ("natural", "slots")
# Tokenizer artifacts stripped before splitting (T5 / BART / BERT spellings).
ARTIFACTS = ("<pad>", "</s>", "<s>", "[PAD]", "[CLS]", "[SEP]")
UNK_TOKENS = ("<unk>", "[UNK]")


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


# ---------------------------------------------------------------------- alignment

# Spellings that differ between tokenized text and detokenized / wordpiece-decoded answers;
# applied after removing whitespace and lower-casing (so "` `" and "``" meet).
_CHAR_MAP = (("``", '"'), ("''", '"'), ("\u201c", '"'), ("\u201d", '"'), ("\u201e", '"'),
             ("\u2018", "'"), ("\u2019", "'"), ("`", "'"), ("-lrb-", "("), ("-rrb-", ")"),
             ("-lsb-", "["), ("-rsb-", "]"), ("-lcb-", "{"), ("-rcb-", "}"), ("\u2013", "-"),
             ("\u2014", "-"))
_WILDCARD = "\x00"
_OVERLAP_COST = 10_000  # more than any distance


def _norm_chars(text: str) -> str:
    """Lower case, no whitespace, no accents (an uncased wordpiece tokenizer drops them), one
    spelling for quotes, brackets and dashes."""
    text = "".join(text.split()).lower()
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    for k, v in _CHAR_MAP:
        text = text.replace(k, v)
    return text


class Aligner:
    """Finds the token spans an answer string can stand for, and picks among them."""

    def __init__(self, tokens: Sequence[str], predicate_index: int):
        self.tokens = [str(t) for t in tokens]
        self.pred = predicate_index
        self.lower = [t.lower() for t in self.tokens]
        # normalized characters of the sentence and, for each, the token it comes from
        self.norm_toks = [_norm_chars(t) for t in self.tokens]
        self.chars, self.owner, self.tok_start = [], [], []
        for i, t in enumerate(self.norm_toks):
            self.tok_start.append(len(self.chars))
            self.chars.extend(t)
            self.owner.extend([i] * len(t))
        self.text = "".join(self.chars)
        self.starts = {pos: i for i, pos in enumerate(self.tok_start) if self.norm_toks[i]}
        self.ends = {}
        for i, t in enumerate(self.norm_toks):
            if t:
                self.ends[self.tok_start[i] + len(t)] = i + 1

    def candidates(self, answer: str) -> list[tuple[int, int]]:
        """All spans the answer matches at the first level that has any."""
        for a in ARTIFACTS:
            answer = answer.replace(a, " ")
        words = answer.split()
        if not words:
            return []
        n, k = len(self.tokens), len(words)
        hits = [(i, i + k) for i in range(n - k + 1) if self.tokens[i:i + k] == words]
        if hits:
            return hits
        lw = [w.lower() for w in words]
        hits = [(i, i + k) for i in range(n - k + 1) if self.lower[i:i + k] == lw]
        if hits:
            return hits
        return self._char_candidates(answer)

    def _char_candidates(self, answer: str) -> list[tuple[int, int]]:
        """Matches that ignore whitespace, case, accents and quote / bracket spellings ("U.S.",
        "don't" for "do n't", '"Okay"' for "`` Okay ''"); <unk> matches anything. A match must
        start at a token start; one that ends inside a token (a truncated last word) is kept,
        snapped to whole tokens, only if nothing matches on token boundaries."""
        a = answer
        for u in UNK_TOKENS:
            a = a.replace(u, _WILDCARD)
        a = _norm_chars(a)
        if not a.strip(_WILDCARD):
            return []
        has_wildcard = _WILDCARD in a
        # an <unk> stands for a few characters (one piece or word), not for any stretch of text
        rx = re.compile(".{1,20}?".join(re.escape(p) for p in a.split(_WILDCARD)), re.S)
        exact, snapped = set(), set()
        for start, s_tok in self.starts.items():
            m = rx.match(self.text, start)
            if not m:
                continue
            if m.end() in self.ends:
                exact.add((s_tok, self.ends[m.end()]))
                continue
            if has_wildcard:  # the shortest wildcard match that ends on a token boundary
                end = next((e for e in sorted(self.ends) if e > m.end()
                            and rx.fullmatch(self.text, start, e)), None)
                if end is not None:
                    exact.add((s_tok, self.ends[end]))
                    continue
            span = (s_tok, self.owner[m.end() - 1] + 1)
            covered = len(a.replace(_WILDCARD, ""))
            if covered >= 0.5 * sum(len(t) for t in self.norm_toks[span[0]:span[1]]):
                snapped.add(span)
        return sorted(exact or snapped)

    def distance(self, span: tuple[int, int]) -> int:
        s, e = span
        if s <= self.pred < e:
            return 0
        return s - self.pred if s > self.pred else self.pred - e + 1

    def _cost(self, span, others) -> int:
        """Distance to the predicate, plus a large cost for nesting in or around another answer
        of the same predicate: arguments rarely overlap, so "the Universe" next to "in the
        Universe" is more likely the other mention."""
        s, e = span
        overlap = any(o != span and s < o[1] and o[0] < e for o in others)
        return self.distance(span) + (_OVERLAP_COST if overlap else 0)

    def _assign(self, cand_lists: Sequence[Sequence[tuple[int, int]]], lower: int,
                forced: tuple[int, tuple[int, int]] | None = None, others=()):
        """Spans for one QA's answers: distinct (two answers of one QA are two spans), starting at
        `lower` or later, each the nearest such to the predicate; most constrained answer first.
        Returns (cost, penalties, spans). A choice that breaks a constraint costs a penalty."""
        spans: list = [None] * len(cand_lists)
        used: set = set()
        cost = penalties = 0
        if forced is not None:
            j, span = forced
            spans[j] = span
            used.add(span)
            cost += self._cost(span, others[j] if others else ())
        order = sorted((j for j in range(len(cand_lists)) if spans[j] is None and cand_lists[j]),
                       key=lambda j: (len(cand_lists[j]), j))
        for j in order:
            free = [c for c in cand_lists[j] if c not in used]
            ok = [c for c in free if c[0] >= lower]
            oth = others[j] if others else ()
            near = lambda cs: min(cs, key=lambda sp: (self._cost(sp, oth), sp)) if cs else None
            pick = near(ok)
            if pick is None:
                penalties += 1
                pick = near(free) or near(cand_lists[j])
            spans[j] = pick
            used.add(pick)
            cost += self._cost(pick, oth)
        return cost, penalties, spans

    def align_qas(self, answers_per_qa: Sequence[Sequence[str]],
                  ordered: bool = False) -> list[list[tuple[int, int] | None]]:
        """A span (or None) for every answer of every QA.

        Each answer goes to the nearest of its matches to the predicate, with two constraints
        the text itself implies (never the gold spans): the answers of one QA are distinct spans
        ("he<sep>he" names two mentions), and, when the format orders QAs by answer position
        (`ordered`), the QAs' earliest answers are non-decreasing in the order they were written.
        Constraints are soft: an answer that cannot meet them still gets its nearest match.
        """
        cands = [[self.candidates(a) for a in answers] for answers in answers_per_qa]
        first = self._align(cands, ordered, None)
        # second pass: the same, avoiding spans that overlap the other answers of the first pass
        chosen = [(i, j, sp) for i, spans in enumerate(first) for j, sp in enumerate(spans) if sp]
        others = [[[sp for (i2, j2, sp) in chosen if (i2, j2) != (i, j)] for j in range(len(c))]
                  for i, c in enumerate(cands)]
        return self._align(cands, ordered, others)

    def _align(self, cands, ordered: bool, others):
        if not ordered:
            return [self._assign(c, 0, others=others[i] if others else ())[2] for i, c in enumerate(cands)]
        # Options per QA: (earliest start, penalties, cost, spans): for every start an answer can
        # take, the best assignment with that answer there and the others at or after it.
        options = []
        for i, c in enumerate(cands):
            opts = {}
            for j, cl in enumerate(c):
                for span in cl:
                    cost, pen, spans = self._assign(c, span[0], forced=(j, span),
                                                    others=others[i] if others else ())
                    m = min(sp[0] for sp in spans if sp is not None)
                    key = (pen, cost)
                    if m not in opts or key < opts[m][:2]:
                        opts[m] = (pen, cost, spans)
            if not opts:
                opts[None] = (0, 0, [None] * len(c))
            options.append(opts)
        # DP over QAs: state = earliest start of the previous QA (None: no aligned answer yet).
        # Score = (constraint violations, total distance); ties go to the smaller earliest start.
        best = {None: ((0, 0), [])}
        for opts in options:
            nxt = {}
            for prev, (score, path) in best.items():
                for m, (pen, cost, spans) in opts.items():
                    if m is None:
                        state, viol = prev, 0
                    else:
                        state, viol = m, int(prev is not None and m < prev)
                    cand = ((score[0] + pen + viol, score[1] + cost), path + [spans])
                    if state not in nxt or cand[0] < nxt[state][0]:
                        nxt[state] = cand
            best = nxt
        _, path = min(best.values(), key=lambda v: v[0])
        return path
