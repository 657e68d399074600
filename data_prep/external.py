"""Readers of external factual-consistency benchmarks (a document, a summary, and a binary label or a
human score per line; conf/benchmark/). Every line is checked before any model loads: a missing field, an
empty text, or a label outside {0, 1} (a score that is no number) is an error naming the file and line."""
from __future__ import annotations

import json
import math
from pathlib import Path

from data_prep.records import DataFormatError, text_lines

TARGETS = ("binary", "score")


def _target(value, kind: str) -> str | float | None:
    """The problem with one target value (a str), or the value as a number."""
    if kind == "binary":
        if isinstance(value, bool) or value not in (0, 1):
            return f"label {value!r} is not 0 or 1"
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"score {value!r} is not a finite number"
    return float(value)


def read_external(path: str | Path, fields: dict, target: str, limit: int | None = None) -> list[dict]:
    """{id, document, summary, target, group, extra} per line of a JSONL benchmark. fields maps these names
    to the file's keys (group may be null: one group; extra: keys copied as they are). Every problem of the
    file is raised at once, each with its line, before anything is scored."""
    path = Path(path)
    if target not in TARGETS:
        raise DataFormatError(f"benchmark target {target!r}: give one of {TARGETS}")
    rows, problems, seen = [], [], {}
    for lineno, line in text_lines(path):  # a missing file or bad UTF-8 is an error naming the file
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"{where}: not JSON ({e.msg})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: not a JSON object")
            continue
        wanted = [k for k in ("id", "document", "summary", "target", "group") if fields.get(k)]
        missing = [fields[k] for k in wanted if fields[k] not in obj]
        if missing:
            problems.append(f"{where}: missing field(s) {missing}")
            continue
        texts = [k for k in ("document", "summary") if not isinstance(obj[fields[k]], str)
                 or not obj[fields[k]].strip()]
        if texts:
            problems.append(f"{where}: {', '.join(fields[k] for k in texts)} empty or not a string")
            continue
        value = _target(obj[fields["target"]], target)
        if isinstance(value, str):
            problems.append(f"{where}: {value}")
            continue
        rid = str(obj[fields["id"]]) if fields.get("id") else f"{path.stem}:{lineno}"
        if rid in seen:
            problems.append(f"{where}: id {rid!r} repeats line {seen[rid]}")
            continue
        seen[rid] = lineno
        rows.append({"id": rid, "document": obj[fields["document"]], "summary": obj[fields["summary"]],
                     "target": value, "group": str(obj[fields["group"]]) if fields.get("group") else "all",
                     "extra": {k: obj.get(k) for k in fields.get("extra") or []}})
    if problems:
        raise DataFormatError(f"{len(problems)} problem(s) in {path}; nothing was scored:\n  "
                              + "\n  ".join(problems[:50]))
    if not rows:
        raise DataFormatError(f"{path}: no records")
    return rows[:limit] if limit else rows
