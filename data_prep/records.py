"""The canonical record (one per predicate instance) and small helpers shared by every reader.

Every reader turns its release into these dicts; everything downstream sees only records:

    {"sentence_id": str, "tokens": [str], "predicate_index": int, "predicate": str,
     "predicate_type": "verbal" | "nominal", "verb_form": str,          # verb lemma (stem)
     "qas": [{"question": str,                                          # natural question, ends in "?"
              "slots": {"wh", "aux", "subj", "verb", "obj", "prep", "obj2"},  # empty slot = "_"
              "is_passive": bool, "is_negated": bool,
              "answers": [[start, end)],                                # end-exclusive token spans
              "answer_texts": [str]}],
     "source": str, "split": str}
"""
from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator

SLOT_NAMES = ("wh", "aux", "subj", "verb", "obj", "prep", "obj2")
EMPTY_SLOT = "_"
RECORD_KEYS = ("sentence_id", "tokens", "predicate_index", "predicate", "predicate_type",
               "verb_form", "qas", "source", "split")
QA_KEYS = ("question", "slots", "is_passive", "is_negated", "answers", "answer_texts")


class DataFormatError(ValueError):
    """A structural problem in a release file (missing file or column): the reader cannot go on."""


class SkipCounter(Counter):
    """Counts rows a reader could not use, by reason, and keeps the first few examples of each."""

    def __init__(self):
        super().__init__()
        self.examples: dict[str, list[str]] = {}
        # Rows kept after a known, harmless repair (counted and reported, not skipped).
        self.kept = Counter()

    def keep(self, reason: str, where: str) -> None:
        self.kept[reason] += 1
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < 3:
            self.examples[reason].append(where)

    def skip(self, reason: str, where: str) -> None:
        self[reason] += 1
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < 3:
            self.examples[reason].append(where)


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file, gzipped when it ends in .gz. Every read error
    names the file and line: invalid UTF-8, a gzip stream that ends early (a cut download), a file
    that is not gzip at all."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{path}: file not found")
    opener = gzip.open if path.suffix == ".gz" else open
    lineno = 0
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                yield lineno, line
    except UnicodeDecodeError as e:
        # decoding runs a block ahead of the lines read: the bad byte is at or after this line
        raise DataFormatError(f"{path}: not valid UTF-8 at or after line {lineno + 1} ({e.reason}, byte "
                              f"{e.object[e.start:e.end]!r})") from None
    except EOFError:
        raise DataFormatError(f"{path}: the gzip stream ends early, after line {lineno}: the file is truncated "
                              "(a cut download?); fetch it again (python -m data_prep.download)") from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise DataFormatError(f"{path}: not a valid gzip file ({e}), after line {lineno}") from None


def check_not_cut(line: str, where: str) -> None:
    """A last line without its newline that does not parse is a file cut mid-record: fail, since
    everything after the cut is missing, not just this record."""
    if not line.endswith("\n"):
        raise DataFormatError(f"{where}: the file ends in the middle of a record: it is truncated (a cut or "
                              "partial copy?); fetch it again (python -m data_prep.download)")


def span_problem(start: int, end: int, n_tokens: int) -> str | None:
    """Why [start, end) is not a span of an n-token sentence (a skip reason), or None."""
    if start < 0:
        return "negative_span_start"
    if end <= start:
        return "span_end_not_after_start"
    if end > n_tokens:
        return "span_outside_sentence"
    return None


def document_id(sentence_id: str) -> str:
    """The document a sentence belongs to: leakage is checked per document, not per sentence.

    `Wiki1k:wikinews:675013:1:2` -> `Wiki1k:wikinews:675013` (the first three fields);
    `TQA:T_0058_1` -> `TQA:T_0058` (TQA ids carry the sentence number after the last `_`).
    """
    parts = sentence_id.split(":")
    if len(parts) >= 5:
        return ":".join(parts[:3])
    head, _, tail = sentence_id.rpartition("_")
    return head if head and tail.isdigit() else sentence_id


def span_text(tokens: list[str], span: list[int] | tuple[int, int]) -> str:
    return " ".join(tokens[span[0]:span[1]])


def validate_record(rec: dict) -> None:
    """Raise ValueError naming the record when it breaks the schema (used by tests and writers)."""
    sid = rec.get("sentence_id", "?")
    if tuple(rec.keys()) != RECORD_KEYS and set(rec.keys()) != set(RECORD_KEYS):
        raise ValueError(f"record {sid}: keys {sorted(rec)} != {sorted(RECORD_KEYS)}")
    n = len(rec["tokens"])
    if not 0 <= rec["predicate_index"] < n:
        raise ValueError(f"record {sid}: predicate_index {rec['predicate_index']} outside 0..{n}")
    if rec["predicate_type"] not in ("verbal", "nominal"):
        raise ValueError(f"record {sid}: predicate_type {rec['predicate_type']!r}")
    for qa in rec["qas"]:
        if set(qa) != set(QA_KEYS):
            raise ValueError(f"record {sid}: QA keys {sorted(qa)} != {sorted(QA_KEYS)}")
        if set(qa["slots"]) != set(SLOT_NAMES):
            raise ValueError(f"record {sid}: slots {sorted(qa['slots'])}")
        for s, e in qa["answers"]:
            if not 0 <= s < e <= n:
                raise ValueError(f"record {sid}: answer span [{s}, {e}) outside the sentence ({n} tokens)")


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> Iterator[dict]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
