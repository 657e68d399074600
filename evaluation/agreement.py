"""Inter-annotator agreement of QASemConsistency votes: the released benchmark, or an annotate.export file.

    python -m evaluation.agreement FILE [FILE ...] [--table] [--majority OUT.jsonl]

Prints one JSON object on stdout: for each dataset and `overall`, `qa_kappa`, `span_kappa` (Fleiss),
`unanimous`, `mixed_predicates`, `not_supported` (fractions), `items`, `qas`, `spans`, `predicates`
(metrics/agreement.py says what each is). A readable table goes to stderr (`--table` puts it on stdout
instead of the JSON). `--majority` writes the majority label of every QA (1 = not supported).
A line that is not a response object stops the run, naming file:line.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from data_prep.consistency import read_row
from data_prep.records import text_lines
from metrics.agreement import agreement, majority_labels, table


def read_responses(paths) -> list[dict]:
    """Every response of the files, in order; each keeps `_file` and `_line` for --majority."""
    rows = []
    for path in paths:
        for lineno, line in text_lines(path):
            if line.strip():
                row = read_row(line, f"{path}:{lineno}")
                rows.append({**row, "_file": str(path), "_line": lineno})
    return rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m evaluation.agreement", description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path, help="benchmark-format JSONL (dev.jsonl, test.jsonl, an export)")
    ap.add_argument("--table", action="store_true", help="print the table on stdout instead of the JSON")
    ap.add_argument("--majority", type=Path, help="write one line per QA with its votes and majority label")
    args = ap.parse_args(argv)
    rows = read_responses(args.files)
    figures = agreement(rows)
    if args.table:
        print(table(figures))
    else:
        print(json.dumps(figures, indent=1))
        print(table(figures), file=sys.stderr)
    if args.majority:
        with args.majority.open("w", encoding="utf-8") as f:
            for m in majority_labels(rows):
                r = rows[m.pop("response")]
                f.write(json.dumps({"file": r["_file"], "line": r["_line"], **m}) + "\n")
    return figures


if __name__ == "__main__":
    try:
        main()
    except ValueError as e:  # DataFormatError: the message names the file and line
        sys.exit(f"error: {e}")
