"""Shared parsing of the QA-SRL GS and QANom CSV releases: both write one row per QA with
`answer_range` "start:end" (end-exclusive) and `answer`, several answers joined by `~!~`, and
the question's template slots in columns (empty slot = "")."""
from __future__ import annotations

import csv
from pathlib import Path

from data_prep.records import EMPTY_SLOT, SLOT_NAMES, DataFormatError, SkipCounter, span_problem, span_text

MULTI_SEP = "~!~"


def read_csv_rows(path: str | Path, required: tuple[str, ...]):
    """Yield (line number, row dict) by header name; a missing file or column is structural."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{path}: file not found")
    f = path.open(encoding="utf-8", newline="")
    try:
        reader = csv.DictReader(f)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise DataFormatError(f"{path}: missing column(s) {missing}; header is {reader.fieldnames}")
        for row in reader:
            yield reader.line_num, row
    except UnicodeDecodeError as e:
        raise DataFormatError(f"{path}: not valid UTF-8 at or after line {reader.line_num + 1} ({e.reason}, byte "
                              f"{e.object[e.start:e.end]!r})") from None
    finally:
        f.close()


def parse_answers(row: dict, tokens: list[str], where: str, skipped: SkipCounter):
    """(spans, texts) of one QA row; answers that cannot be used are counted by reason.

    Returns None when the row's ranges do not parse at all (the row is counted once)."""
    ranges = row["answer_range"].split(MULTI_SEP)
    texts = row["answer"].split(MULTI_SEP) if row.get("answer") is not None else [None] * len(ranges)
    if len(texts) != len(ranges):  # cannot pair texts with ranges: keep the spans, unchecked
        skipped.keep("answer_texts_not_paired_with_ranges", where)
        texts = [None] * len(ranges)
    spans, kept_texts = [], []
    for rng, text in zip(ranges, texts):
        try:
            start, end = (int(x) for x in rng.split(":"))
        except ValueError:
            skipped.skip("unparsable_answer_range", f"{where} ({rng!r})")
            return None
        problem = span_problem(start, end, len(tokens))
        if problem:
            skipped.skip(problem, f"{where} ([{start}, {end}) in {len(tokens)} tokens)")
            continue
        if text is not None and _norm(text) != _norm(span_text(tokens, (start, end))):
            if _encoding_glitch(text, span_text(tokens, (start, end))):
                skipped.keep("answer_text_encoding_glitch", f"{where} ({text!r} vs span {span_text(tokens, (start, end))!r})")
            else:
                skipped.skip("answer_text_mismatch",
                             f"{where} ({text!r} vs span {span_text(tokens, (start, end))!r})")
                continue
        if [start, end] not in spans:
            spans.append([start, end])
            kept_texts.append(span_text(tokens, (start, end)))
    return spans, kept_texts


def _encoding_glitch(text: str, span: str) -> bool:
    """The releases' known export glitches: non-ASCII letters written as "?" ("Garc?s" for
    "Garcés"), and the token "NA" written as an empty cell. The span is right in both cases."""
    if not text.strip():
        return span.strip() in ("NA", "N/A", "NaN", "nan", "null", "None")
    return _norm("".join(c if ord(c) < 128 else "?" for c in span)) == _norm(text)


def _norm(text: str) -> str:
    return " ".join(text.split())


def slots_from_row(row: dict, question: str) -> dict:
    """The 7 slots; the CSVs have no `verb` column, so the verb slot is what the question holds
    between the subject and the object (it carries the inflection and any be/been/not prefix)."""
    slots = {k: (row.get(k) or "").strip() or EMPTY_SLOT for k in SLOT_NAMES if k != "verb"}
    words = question.rstrip("?").lower().split()
    head = [w for k in ("wh", "aux", "subj") if slots[k] != EMPTY_SLOT for w in slots[k].lower().split()]
    tail = [w for k in ("obj", "prep", "obj2") if slots[k] != EMPTY_SLOT
            for w in slots[k].lower().replace(MULTI_SEP, " ").split()]
    if slots["aux"].endswith("n't"):  # "doesn't" is written out as "does not" in the question
        base = {"won't": "will", "can't": "can", "shan't": "shall"}.get(slots["aux"].lower(), slots["aux"][:-3].lower())
        expanded = [w for k in ("wh",) if slots[k] != EMPTY_SLOT for w in slots[k].lower().split()] + [base] + \
            [w for k in ("subj",) if slots[k] != EMPTY_SLOT for w in slots[k].lower().split()] + ["not"]
        if words[:len(expanded)] == expanded:
            head = expanded
    rest = words[len(head):] if words[:len(head)] == head else words[1:]
    while tail and rest and rest[-1] == tail[-1]:  # trim the object/preposition words the question ends in
        rest, tail = rest[:-1], tail[:-1]
    middle = rest
    slots["verb"] = " ".join(middle) or EMPTY_SLOT
    for k in ("prep", "obj2"):
        slots[k] = slots[k].replace(MULTI_SEP, " ")
    return slots


def add_qa(qas: dict, row: dict, question: str, tokens: list[str], where: str, skipped: SkipCounter) -> bool:
    """Add one QA row to `qas` (question -> QA); a repeated question merges its answers; a row without a
    usable answer is counted in `skipped` and adds nothing. Returns True when the question was already there."""
    parsed = parse_answers(row, tokens, where, skipped)
    if parsed is None:
        return False
    spans, texts = parsed
    if not spans:
        skipped.skip("qa_without_usable_answer", where)
        return False
    if question in qas:
        qa = qas[question]
        for s, t in zip(spans, texts):
            if s not in qa["answers"]:
                qa["answers"].append(s)
                qa["answer_texts"].append(t)
        return True
    qas[question] = {
        "question": question,
        "slots": slots_from_row(row, question),
        "is_passive": row.get("is_passive", "False").strip() == "True",
        "is_negated": row.get("is_negated", "False").strip() == "True",
        "answers": spans,
        "answer_texts": texts,
    }
    return False
