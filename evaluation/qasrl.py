"""Score predicted QA-SRL records against gold ones; prints one JSON object.

    python -m evaluation.qasrl GOLD.jsonl PRED.jsonl [--protocol qanom|gs] [--match-strict]

Both files hold canonical records (data_prep/records.py), one predicate per line.
"""
from __future__ import annotations

import argparse
import json
import sys

from data_prep.records import read_jsonl
from metrics.qasrl import PROTOCOLS, InvalidRecordError, evaluate_records


def add_matching_args(ap: argparse.ArgumentParser) -> None:
    """--protocol and --match-strict, shared by the metric CLIs."""
    ap.add_argument("--protocol", choices=sorted(PROTOCOLS), default="qanom",
                    help="qanom: IOU >= 0.3, greedy matching (default); gs: IOU >= 0.5, maximum matching")
    ap.add_argument("--match-strict", action="store_true",
                    help="require IOU > threshold instead of >= (the QANom reference code uses >)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m evaluation.qasrl", description=__doc__.split("\n")[0])
    ap.add_argument("gold", help="gold records (JSONL)")
    ap.add_argument("pred", help="predicted records (JSONL)")
    add_matching_args(ap)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    records = {}
    for name in ("gold", "pred"):
        path = getattr(args, name)
        try:
            records[name] = list(read_jsonl(path))
        except (OSError, ValueError) as e:  # missing/unreadable file, bad JSON or encoding
            where = f"{name} file" if str(path) in str(e) else f"{name} file {path}"
            ap.error(f"{where}: {e}")  # exits with status 2
    try:
        result = evaluate_records(records["gold"], records["pred"], protocol=args.protocol,
                                  strict=args.match_strict)
    except InvalidRecordError as e:  # name the file and line of the record
        path = args.gold if e.side == "gold" else args.pred
        with open(path, encoding="utf-8") as f:
            lines = [n for n, line in enumerate(f, 1) if line.strip()]
        ap.error(f"{path}:{lines[e.position]}: {e}")
    except ValueError as e:  # e.g. a duplicate predicate
        ap.error(f"{args.gold} vs {args.pred}: {e}")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
