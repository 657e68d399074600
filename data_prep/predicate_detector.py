"""QANom predicate-detector files: one `token label` a line (label O / True / False), a blank
line between sentences -> {"tokens", "labels"} per sentence (True = nominal predicate,
False = candidate that is not one, O = not a candidate)."""
from __future__ import annotations

from pathlib import Path

from data_prep.records import DataFormatError, SkipCounter, text_lines

LABELS = ("O", "True", "False")


def read_predicate_detector(path: str | Path, split: str):
    """Returns (sentences, skipped). A line that is not `token label` with a known label drops
    its whole sentence (counted), since the labels of a partial sentence would be misaligned."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{path}: predicate-detector file not found")
    sentences, skipped = [], SkipCounter()
    tokens, labels, bad = [], [], None

    def flush():
        nonlocal tokens, labels, bad
        if tokens:
            if bad:
                skipped.skip("malformed_line", bad)
            else:
                sentences.append({"sentence_index": len(sentences), "tokens": tokens, "labels": labels,
                                  "split": split})
        tokens, labels, bad = [], [], None

    for lineno, line in text_lines(path):
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            continue
        parts = line.rsplit(" ", 1)
        if len(parts) != 2 or parts[1] not in LABELS or not parts[0]:
            bad = bad or f"{path}:{lineno} ({line!r})"
            tokens.append(line)
            continue
        tokens.append(parts[0])
        labels.append(parts[1])
    flush()
    return sentences, skipped
