"""Align the QASem QAs of two texts: the QAs that ask the same question of the same predicate, and
how their answers relate.

Two QAs align when their predicates share verb form and type (verbal / nominal) and their
questions map to the same role (metrics.roles: R0, R1, R2, when, where, ...). For each aligned
pair the answers are compared: the same words, overlapping, or disjoint, and whether numbers
(digits or number words), years and capitalised names on both sides differ. The entailment
classifier's P(supported) of each QA against the other text, in both directions, comes with it.

Used by the self-contradiction scorer (models/contradiction/model.py) and meant for the entailment
classifier's structure features: one module for both.
"""
from __future__ import annotations

import re
from typing import Sequence

from metrics.roles import qa_role

NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                     "ninety": "90", "hundred": "100", "thousand": "1000", "million": "1000000",
                     "once": "1", "twice": "2", "first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5"})
STOP = frozenset("the a an of in on at to for by with and or as its his her their this that from".split())
PRONOUNS = frozenset("he she it they him her them his hers its their theirs we us our i me my you your this that these those "
                     "who which".split())


def numbers_in(tokens: Sequence[str]) -> set[str]:
    """Numbers a span states: digits (1,200 -> 1200; 13th -> 13; 1990s -> 1990) and number words."""
    out = set()
    for t in tokens:
        low = t.lower().replace(",", "")
        m = re.fullmatch(r"(\d+(?:\.\d+)?)(?:st|nd|rd|th|s)?", low)
        if m:
            out.add(m.group(1))
        elif low in NUMBER_WORDS:
            out.add(NUMBER_WORDS[low])
    return out


def _names(tokens: Sequence[str], start: int) -> set[str]:
    """Capitalised words of a span (not the sentence's first word, which is capitalised anyway)."""
    return {t for i, t in enumerate(tokens, start) if i > 0 and t[:1].isupper() and t.isalpha() and t.lower() not in STOP}


def content_set(tokens: Sequence[str]) -> set[str]:
    return {t.lower() for t in tokens if any(c.isalnum() for c in t) and t.lower() not in STOP}


def numbers_conflict(a: set[str], b: set[str]) -> bool:
    """Both state a number of one kind (years 1000-2199, or other numbers) and share none of that
    kind: "in 1960" vs "in 1964", "over 800" vs "over 700"; "in 2009, 2013" vs "four times" is not."""
    def kinds(nums):
        years = {n for n in nums if n.isdigit() and 1000 <= int(n) < 2200}
        return years, nums - years

    return any(x and y and not x & y for x, y in zip(kinds(a), kinds(b)))


def answer_relation(a: Sequence[str], b: Sequence[str], a_start: int = 1, b_start: int = 1) -> dict:
    """How two answers relate: relation same / overlap / pronoun (one side is a lone pronoun) /
    disjoint (content words), numbers_differ
    and names_differ (both sides state some and share none), and the content-word Jaccard."""
    ca, cb = content_set(a), content_set(b)
    na, nb = numbers_in(a), numbers_in(b)
    ma, mb = _names(a, a_start), _names(b, b_start)
    pronoun = any(len(x) == 1 and x[0].lower() in PRONOUNS for x in (a, b))  # "She" vs "Merkel": unknown, likely the same
    relation = "same" if ca == cb else "overlap" if ca & cb else "pronoun" if pronoun else "disjoint"
    return {"relation": relation,
            "numbers_differ": numbers_conflict(na, nb),
            "names_differ": bool(ma and mb and not ma & mb),
            "jaccard": len(ca & cb) / len(ca | cb) if ca | cb else 1.0}


def qas_of_records(records: Sequence[dict]) -> list[dict]:
    """Flatten predicted records (one per predicate) into one dict per QA answer, with its role."""
    out = []
    for rec in records:
        for qa in rec.get("qas", []):
            role = qa_role(qa)
            for span, text in zip(qa.get("answers", []), qa.get("answer_texts", [])):
                out.append({"predicate_index": rec["predicate_index"], "predicate": rec["predicate"],
                            "predicate_type": rec.get("predicate_type", "verbal"),
                            "verb_form": verb_form_of(rec),
                            "question": qa["question"], "role": role, "is_negated": bool(qa.get("is_negated")),
                            "answer": text, "answer_span": list(span)})
    return out


def detect_predicates(sentences: Sequence[Sequence[str]], detector, memo: dict | None = None) -> list[dict]:
    """The detector's predicates of every tokenized sentence (batched over all of them), as parser
    input records in sentence order; each carries `sentence`, its sentence's index. An empty
    sentence has none. A sentence is read once: `memo` ({tokens: the detector's predicates}) keeps
    them across calls (a response's earlier sentences recur in every premise of its pairs)."""
    sentences = [list(s) for s in sentences]
    memo = {} if memo is None else memo
    new = [s for s in dict.fromkeys(tuple(s) for s in sentences if s) if s not in memo]
    if new:
        memo.update(zip(new, detector.detect([list(s) for s in new])))
    return [{"sentence_id": str(j), "sentence": j, "tokens": toks, "predicate_index": p["predicate_index"],
             "predicate": p["predicate"], "predicate_type": p["predicate_type"], "verb_form": p["verb_form"]}
            for j, toks in enumerate(sentences) for p in (memo[tuple(toks)] if toks else [])]


def _predicate_key(record: dict) -> tuple:
    """What a parse of one predicate depends on: its sentence and the predicate (not where the sentence sits)."""
    return (tuple(record["tokens"]), record["predicate_index"], record["predicate"], record.get("predicate_type"),
            record.get("verb_form"))


def parse_predicates(records: Sequence[dict], parser, memo: dict | None = None) -> list[list[dict]]:
    """The QAs of each predicate record (the parser batched over all of them); a predicate of a sentence
    is parsed once (`memo`, {_predicate_key: QAs}, keeps them across calls). Each record gets its own copies."""
    memo = {} if memo is None else memo
    new = {k: r for k, r in ((_predicate_key(r), r) for r in records) if k not in memo}
    if new:
        preds = parser.predict(list(new.values()))[0]
        memo.update(zip(new, (qas_of_records([rec]) for rec in preds)))
    return [[dict(q, answer_span=list(q["answer_span"])) for q in memo[_predicate_key(r)]] for r in records]


def extract_qas(sentences: Sequence[Sequence[str]], detector, parser) -> list[list[dict]]:
    """The QAs of each tokenized sentence: predicates from the detector, QAs from the parser, both
    batched over all sentences, each distinct sentence read once (a ChatProtect sentence recurs in its
    pairs). An empty sentence has none."""
    records = detect_predicates(sentences, detector)
    by_sentence: list[list[dict]] = [[] for _ in sentences]
    for rec, qas in zip(records, parse_predicates(records, parser)):
        by_sentence[rec["sentence"]].extend(qas)
    return by_sentence


def verb_form_of(record: dict) -> str:
    """The verb form a predicate record (or one of its QAs) aligns by."""
    return (record.get("verb_form") or record["predicate"]).lower()


def predicates_of(qas: Sequence[dict]) -> set[tuple[str, str]]:
    return {(q["verb_form"], q["predicate_type"]) for q in qas}


def align(qas_a: Sequence[dict], qas_b: Sequence[dict], tokens_a: Sequence[str], tokens_b: Sequence[str]) -> list[dict]:
    """Every pair of QAs (one of each text) on the same predicate (verb form and type) and role,
    with the relation of their answers."""
    out = []
    for i, qa in enumerate(qas_a):
        if qa["role"] is None:
            continue
        for k, qb in enumerate(qas_b):
            if (qa["verb_form"], qa["predicate_type"], qa["role"]) != (qb["verb_form"], qb["predicate_type"], qb["role"]):
                continue
            (sa, ea), (sb, eb) = qa["answer_span"], qb["answer_span"]
            out.append({"a": i, "b": k, "predicate": qa["verb_form"], "role": qa["role"],
                        "negation_differs": qa["is_negated"] != qb["is_negated"],
                        **answer_relation(tokens_a[sa:ea], tokens_b[sb:eb], sa, sb)})
    return out
