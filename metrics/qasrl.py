"""QA-SRL / QANom evaluation metrics: pure functions of canonical records (data_prep/records.py).

Reference: the QANom evaluation code, kleinay/QANom `qanom/evaluation/{evaluate,alignment,metrics}.py`
(Klein et al. 2020), which these functions reproduce for the default "qanom" protocol:
- arguments of a predicate = every answer span of every QA (duplicates kept in the totals);
- UA: pairs with IOU >= 0.3 (`>` there: strict=True), greedy by IOU descending, one-to-one over
  DISTINCT spans (the reference keys its match dict by span); TP = matches, FP = #sys args - TP,
  FN = #gold args - TP;
- LA: a UA match is labeled-correct when the first QA holding the sys span and the first QA
  holding the gold span map to the same role (metrics/roles.py); FP/FN as for UA;
- role: QAs are aligned through the UA matches; a gold QA is a TP when exactly one sys QA aligns
  to it (else FN), a sys QA is an FP unless exactly one gold QA aligns to it.
The "gs" protocol (QA-SRL GS, Roit et al. 2020) swaps in IOU >= 0.5 and a maximum bipartite matching.

Deliberate differences from the reference (see DESIGN.md, "Metrics"):
- gold predicates without a prediction count all their arguments (and QAs) as FN, and predicted
  predicates absent from gold count as FP; the reference evaluates only predicates present in both;
- the reference skips predicates whose is_verbal flag differs between sys and gold; records carry
  no such flag, so every predicate is scored;
- precision / recall are 0 (not 1) when their denominator is 0.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from metrics.roles import qa_role

# IOU thresholds as exact fractions, so that 3/10 compares equal to 0.3 and not "almost".
PROTOCOLS = {"qanom": Fraction(3, 10), "gs": Fraction(1, 2)}
PREDICATE_TYPES = ("verbal", "nominal")

Span = tuple[int, int]


# ----------------------------------------------------------------------------- spans

def _iou_exact(a: Sequence[int], b: Sequence[int]) -> Fraction:
    overlap = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - overlap
    # A degenerate (empty or reversed) span overlaps nothing; do not divide by zero for it.
    return Fraction(overlap, union) if union > 0 and overlap > 0 else Fraction(0)


def iou(a: Sequence[int], b: Sequence[int]) -> float:
    """Intersection over union of two end-exclusive token spans [start, end)."""
    return float(_iou_exact(a, b))


def _check_protocol(protocol: str) -> Fraction:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}: expected one of {sorted(PROTOCOLS)}")
    return PROTOCOLS[protocol]


def match_spans(sys_spans: Sequence[Sequence[int]], gold_spans: Sequence[Sequence[int]],
                protocol: str = "qanom", strict: bool = False) -> list[tuple[int, int]]:
    """One-to-one matches between sys and gold spans, as (i_sys, i_gold) index pairs.

    Each distinct span takes part in at most one match, on each side; a match names the first
    occurrence of its spans. "qanom": IOU >= 0.3 (> 0.3 if strict), greedy by IOU descending;
    "gs": IOU >= 0.5 (> 0.5 if strict), maximum matching (ties broken by total IOU).
    """
    threshold = _check_protocol(protocol)
    sys_idx = _first_occurrences(sys_spans)
    gold_idx = _first_occurrences(gold_spans)

    # Candidates in sys-then-gold order: the reference's stable sort keeps this order among ties.
    candidates = []
    for i in sys_idx:
        for j in gold_idx:
            score = _iou_exact(sys_spans[i], gold_spans[j])
            if score > threshold or (not strict and score == threshold):
                candidates.append((i, j, score))
    if not candidates:
        return []

    if protocol == "qanom":
        used_sys, used_gold, matches = set(), set(), []
        for i, j, _ in sorted(candidates, key=lambda c: c[2], reverse=True):
            if i not in used_sys and j not in used_gold:
                matches.append((i, j))
                used_sys.add(i)
                used_gold.add(j)
        return sorted(matches)

    # gs: maximum-cardinality matching. Each edge weighs big + IOU with big > any matching's
    # total IOU, so one more edge always beats any IOU gain; IOU only decides among maxima.
    rows = {i: r for r, i in enumerate(sys_idx)}
    cols = {j: c for c, j in enumerate(gold_idx)}
    big = min(len(rows), len(cols)) + 1
    weights = np.zeros((len(rows), len(cols)))
    for i, j, score in candidates:
        weights[rows[i], cols[j]] = big + float(score)
    r_ind, c_ind = linear_sum_assignment(weights, maximize=True)
    return sorted((sys_idx[r], gold_idx[c]) for r, c in zip(r_ind, c_ind) if weights[r, c] > 0)


def _first_occurrences(spans: Sequence[Sequence[int]]) -> list[int]:
    """Indices of the first occurrence of each distinct span, in order."""
    seen: dict[Span, int] = {}
    for k, span in enumerate(spans):
        seen.setdefault((int(span[0]), int(span[1])), k)
    return list(seen.values())


# ----------------------------------------------------------------------------- counts

@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)


def prf(tp: int, fp: int, fn: int) -> dict:
    """Precision, recall, F1 (each 0 when undefined) together with the counts they came from."""
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def _arguments(qas: Iterable[dict]) -> tuple[list[Span], list[int]]:
    """All answer spans of a predicate's QAs, and for each the index of the QA holding it."""
    spans, owners = [], []
    for q, qa in enumerate(qas):
        for span in qa.get("answers") or []:
            spans.append((int(span[0]), int(span[1])))
            owners.append(q)
    return spans, owners


def evaluate_predicate(gold_qas: Sequence[dict], sys_qas: Sequence[dict],
                       protocol: str = "qanom", strict: bool = False) -> dict[str, Counts]:
    """UA, LA and role counts for one predicate, given its gold and system QAs."""
    gold_spans, gold_owner = _arguments(gold_qas)
    sys_spans, sys_owner = _arguments(sys_qas)
    matches = match_spans(sys_spans, gold_spans, protocol, strict)

    ua_tp = len(matches)
    ua = Counts(ua_tp, len(sys_spans) - ua_tp, len(gold_spans) - ua_tp)

    # Matches name first occurrences, so the owner is the first QA holding the span, as the
    # reference's find_role picks it. A QA without slots has no role and never agrees.
    gold_roles = [qa_role(qa) for qa in gold_qas]
    sys_roles = [qa_role(qa) for qa in sys_qas]
    la_tp = sum(1 for i, j in matches
                if sys_roles[sys_owner[i]] is not None
                and sys_roles[sys_owner[i]] == gold_roles[gold_owner[j]])
    la = Counts(la_tp, len(sys_spans) - la_tp, len(gold_spans) - la_tp)

    # Role alignment as in the reference's align_by_argument: every occurrence of a matched sys
    # span (in whichever sys QA) aligns its QA with the gold QA of the matched gold span. The
    # reference keys roles by value, so QAs repeated word for word are one role: each QA stands
    # for the first QA identical to it.
    sys_same, gold_same = _first_identical(sys_qas), _first_identical(gold_qas)
    gold_of_span = {sys_spans[i]: gold_same[gold_owner[j]] for i, j in matches}
    sys_to_gold: dict[int, set[int]] = defaultdict(set)
    gold_to_sys: dict[int, set[int]] = defaultdict(set)
    for span, q in zip(sys_spans, sys_owner):
        if span in gold_of_span:
            sys_to_gold[sys_same[q]].add(gold_of_span[span])
            gold_to_sys[gold_of_span[span]].add(sys_same[q])
    gold_ids, sys_ids = set(gold_same), set(sys_same)
    role_tp = sum(1 for g in gold_ids if len(gold_to_sys[g]) == 1)
    role = Counts(role_tp, sum(1 for s in sys_ids if len(sys_to_gold[s]) != 1), len(gold_ids) - role_tp)
    return {"ua": ua, "la": la, "role": role}


def _first_identical(qas: Sequence[dict]) -> list[int]:
    """For each QA, the index of the first QA equal to it word for word (question, slots, voice,
    negation, answers): the reference's roles are values, so repeats are one role."""
    first: dict = {}
    out = []
    for k, qa in enumerate(qas):
        slots = qa.get("slots") or {}
        key = (qa.get("question"), tuple(sorted((str(a), str(b)) for a, b in slots.items())),
               bool(qa.get("is_passive")), bool(qa.get("is_negated")),
               tuple(tuple(int(x) for x in a) for a in qa.get("answers") or []))
        out.append(first.setdefault(key, k))
    return out


# ----------------------------------------------------------------------------- records

def _key(rec: dict, side: str, n: int) -> tuple[str, int]:
    if not isinstance(rec, dict) or "sentence_id" not in rec or "predicate_index" not in rec:
        raise ValueError(f"{side} record #{n}: not a record with sentence_id and predicate_index")
    return str(rec["sentence_id"]), int(rec["predicate_index"])


class InvalidRecordError(ValueError):
    """A gold or predicted record the metric cannot score: `position` is its index in the list."""

    def __init__(self, side: str, position: int, message: str):
        super().__init__(f"{side} record #{position}: {message}")
        self.side, self.position = side, position


def check_record(rec: dict, side: str, n: int, tokens: Sequence[str] | None = None) -> None:
    """Types and span bounds of one record, before anything is counted: `qas` a list of QAs whose
    `answers` are [start, end) integer pairs with 0 <= start < end <= the sentence length (from the
    record's own `tokens`, else `tokens`). A span one token past the end would otherwise still
    match a gold span (IOU >= 0.3), and an end before its start would count silently."""
    where = f"(sentence_id={rec.get('sentence_id')!r}, predicate_index={rec.get('predicate_index')})"
    if "qas" not in rec:
        raise InvalidRecordError(side, n, f"{where} has no 'qas' (give [] for a predicate without QAs)")
    if not isinstance(rec["qas"], list):
        raise InvalidRecordError(side, n, f"{where}: 'qas' is a {type(rec['qas']).__name__}, not a list")
    toks = rec.get("tokens") if isinstance(rec.get("tokens"), list) else tokens
    for q, qa in enumerate(rec["qas"]):
        answers = qa.get("answers") if isinstance(qa, dict) else None
        if not isinstance(answers, list):
            raise InvalidRecordError(side, n, f"{where}: QA {q} has no list of 'answers'")
        for span in answers:
            ok = isinstance(span, (list, tuple)) and len(span) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in span)
            if not ok:
                raise InvalidRecordError(side, n, f"{where}: QA {q} answer {span!r} is not a [start, end) pair of integers")
            s, e = span
            if s < 0 or e <= s or (toks is not None and e > len(toks)):
                size = f" of a {len(toks)}-token sentence" if toks is not None else ""
                raise InvalidRecordError(side, n, f"{where}: QA {q} answer [{s}, {e}) is not a span{size} "
                                                  "(0 <= start < end <= length)")


def _index(records: Iterable[dict], side: str) -> dict[tuple[str, int], dict]:
    by_key: dict[tuple[str, int], dict] = {}
    for n, rec in enumerate(records):
        key = _key(rec, side, n)
        check_record(rec, side, n)
        if key in by_key:
            raise ValueError(f"duplicate {side} record for predicate "
                             f"(sentence_id={key[0]!r}, predicate_index={key[1]})")
        by_key[key] = rec
    return by_key


def _summary(counts: dict[str, Counts]) -> dict:
    return {name: prf(c.tp, c.fp, c.fn) for name, c in counts.items()}


def evaluate_records(gold: list[dict], pred: list[dict], protocol: str = "qanom",
                     strict: bool = False) -> dict:
    """Micro-averaged UA / LA / role P-R-F1 of `pred` against `gold`, with breakdowns.

    Predicates are keyed by (sentence_id, predicate_index). Breakdowns by source and by
    predicate_type follow the gold record (the predicted one for extra predicates).
    """
    _check_protocol(protocol)
    gold_by_key = _index(gold, "gold")
    pred_by_key = _index(pred, "predicted")
    for n, (key, rec) in enumerate(pred_by_key.items()):  # bounds from the gold sentence when the prediction has no tokens
        if "tokens" not in rec and key in gold_by_key:
            check_record(rec, "predicted", n, gold_by_key[key].get("tokens"))

    def zero() -> dict[str, Counts]:
        return {"ua": Counts(), "la": Counts(), "role": Counts()}

    total = zero()
    groups: dict[str, dict[str, dict]] = {"by_source": {}, "by_predicate_type": {}}
    group_sizes: dict[tuple[str, str], int] = defaultdict(int)
    for ptype in PREDICATE_TYPES:  # both types always reported, even when absent
        groups["by_predicate_type"][ptype] = zero()

    def add(rec: dict, counts: dict[str, Counts], is_gold: bool) -> None:
        for name in counts:
            total[name] += counts[name]
        for group, field in (("by_source", "source"), ("by_predicate_type", "predicate_type")):
            label = str(rec.get(field, "unknown"))
            bucket = groups[group].setdefault(label, zero())
            for name in counts:
                bucket[name] += counts[name]
            group_sizes[(group, label)] += int(is_gold)  # like "predicates": gold ones only

    missing = 0
    for key, gold_rec in gold_by_key.items():
        pred_rec = pred_by_key.get(key)
        if pred_rec is None:
            missing += 1  # no prediction at all: every gold argument is a miss
            sys_qas = []
        else:
            sys_qas = pred_rec.get("qas") or []
        add(gold_rec, evaluate_predicate(gold_rec.get("qas") or [], sys_qas, protocol, strict),
            is_gold=True)

    extra = [rec for key, rec in pred_by_key.items() if key not in gold_by_key]
    for pred_rec in extra:  # predicted where gold has no predicate: every argument is spurious
        add(pred_rec, evaluate_predicate([], pred_rec.get("qas") or [], protocol, strict),
            is_gold=False)

    result = _summary(total)
    for group, buckets in groups.items():
        result[group] = {label: dict(_summary(c), predicates=group_sizes[(group, label)])
                         for label, c in sorted(buckets.items())}
    result.update(predicates=len(gold_by_key), missing_predicates=missing,
                  extra_predicates=len(extra), protocol=protocol, strict=strict)
    return result
