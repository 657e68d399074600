"""ChatProtect self-contradiction pairs (JSONL, one pair a line; ../shared/data/chatprotect/README):
{id, prompt, prefix, orig, alt, label?, generator?, kind?} -> {id, group, prefix, a, b, label, generator, kind?} (kind: a synthetic pair's).

Every line is checked before any model loads: a line that is not JSON, or not an object with
string `orig` and `alt` (or `a` and `b`), or a label other than 0 / 1, stops the read with the file
and line. Empty sentences are kept: the scorer gives them a status, not a score.
"""
from __future__ import annotations

import json
from pathlib import Path

from data_prep.records import DataFormatError, text_lines


def read_pairs(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{path}: pairs file not found")
    pairs, problems = [], []
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"{where}: not valid JSON ({e.msg})")
            continue
        a = row.get("orig", row.get("a")) if isinstance(row, dict) else None
        b = row.get("alt", row.get("b")) if isinstance(row, dict) else None
        if not isinstance(a, str) or not isinstance(b, str):
            problems.append(f"{where}: expected an object with string 'orig' and 'alt' (or 'a' and 'b')")
            continue
        label = row.get("label")
        if label not in (None, 0, 1) or isinstance(label, bool):
            problems.append(f"{where}: label must be 0 or 1, not {label!r}")
            continue
        prefix = row.get("prefix") or ""
        if not isinstance(prefix, str):
            problems.append(f"{where}: prefix must be a string")
            continue
        pairs.append({"id": str(row.get("id", f"{path.stem}:{lineno}")), "group": str(row.get("prompt", "")),
                      "prefix": prefix, "a": a, "b": b, "label": label, "generator": row.get("generator"),
                      **({"kind": row["kind"]} if "kind" in row else {})})  # the synthetic set's pair kind
    if problems:
        raise DataFormatError(f"{len(problems)} bad line(s) in {path}; nothing was scored:\n  " + "\n  ".join(problems[:50]))
    return pairs
