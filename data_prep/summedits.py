"""SummEdits (Laban et al. 2023, salesforce/factualNLG, Apache-2.0): its evaluation split as one JSONL file.

The release holds one JSON list per domain, data/summedits/summedits_<domain>.json, each row tagged with
its `split`: "evaluation" (the benchmark's development split) or "test". Only the evaluation rows are ever
kept: the test split is held out, so nothing here writes it, and data_prep.download deletes the fetched
domain files (which hold it) once the output is made. The split is fixed here, not a config option.

One line per evaluation row, domains in the order given and rows in the release's order:
{"id": "<domain>-<release id>", "domain", "doc", "summary", "label", "original_summary", "edit_types"},
json.dumps' default separators and ensure_ascii, as in ../shared/data/summedits/evaluation.jsonl.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from data_prep.records import DataFormatError

SPLIT = "evaluation"  # the only split this module writes
SPLITS = {"evaluation", "test"}  # what the release tags rows with; anything else is refused
FIELDS = ("doc", "summary", "label", "original_summary", "edit_types")


def domain_rows(data: bytes, domain: str, name: str) -> list[dict]:
    """The evaluation rows of one domain file (`name` names it in errors), in the output's shape."""
    try:
        rows = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataFormatError(f"{name}: not valid JSON ({e})") from None
    if not isinstance(rows, list):
        raise DataFormatError(f"{name}: expected a JSON list of rows, got {type(rows).__name__}")
    out = []
    for i, row in enumerate(rows):
        missing = [k for k in ("id", "split", *FIELDS) if not isinstance(row, dict) or k not in row]
        if missing:
            raise DataFormatError(f"{name}: row {i} lacks {', '.join(missing)}")
        if row["split"] not in SPLITS:
            raise DataFormatError(f"{name}: row {i} has split {row['split']!r}, expected one of {sorted(SPLITS)}")
        if row["split"] != SPLIT:
            continue  # a test row: never kept
        out.append({"id": f"{domain}-{row['id']}", "domain": domain, **{k: row[k] for k in FIELDS}})
    return out


def release_jsonl(files: Mapping[str, bytes], domains: list[str], names: Mapping[str, str] | None = None) -> bytes:
    """The evaluation split of `domains` from `files` ({domain: that domain file's bytes}); `names` ({domain:
    file name}) is what errors call each file."""
    names = names or {}
    lines = []
    for domain in domains:
        name = names.get(domain, domain)
        if domain not in files:
            raise DataFormatError(f"{name}: not in the release")
        lines += [json.dumps(r) + "\n" for r in domain_rows(files[domain], domain, name)]
    return "".join(lines).encode("ascii")
