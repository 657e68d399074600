"""The ceiling of a QA text format: gold record -> target text -> decode -> align -> score vs gold.

    python -m evaluation.roundtrip GOLD.jsonl --format NAME [--protocol qanom|gs] [--match-strict]

Prints one JSON object: the metrics of `evaluation.qasrl` plus "decode" counters (malformed,
unaligned, invalid_question) summed over all records. The decoder sees only the target text, the
sentence tokens, the predicate index and the verb form, never the gold spans.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Iterable, Mapping

from data_prep.records import read_jsonl
from evaluation.qasrl import add_matching_args
from metrics.qasrl import evaluate_records
from models.parser.qa_format import PRESETS, get_format, prediction_record


def roundtrip_predictions(records: Iterable[Mapping], fmt) -> tuple[list[dict], dict]:
    """The decoded prediction record for every gold record, and the summed decode counters."""
    fmt = get_format(fmt)
    preds, counts = [], {"malformed": 0, "unaligned": 0, "invalid_question": 0}
    for rec in records:
        _, target = fmt.encode(rec)
        res = fmt.decode(target, rec["tokens"], rec["predicate_index"], rec.get("verb_form"))
        for k, v in res.counts().items():
            counts[k] += v
        preds.append(prediction_record(rec, res.qas))
    return preds, counts


def roundtrip(records, fmt, protocol: str = "qanom", strict: bool = False) -> dict:
    records = list(records)
    preds, counts = roundtrip_predictions(records, fmt)
    result = evaluate_records(records, preds, protocol=protocol, strict=strict)
    result["decode"] = counts
    result["format"] = get_format(fmt).name
    return result


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m evaluation.roundtrip", description=__doc__.split("\n")[0])
    ap.add_argument("gold", help="gold records (JSONL)")
    ap.add_argument("--format", default="qasem_parser",
                    help=f"a preset ({', '.join(sorted(PRESETS))}) or a format JSON file")
    add_matching_args(ap)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        if args.format in PRESETS:
            fmt = get_format(args.format)
        elif args.format.endswith(".json"):
            with open(args.format, encoding="utf-8") as f:
                fmt = get_format(json.load(f))
        else:
            fmt = get_format(args.format)  # raises with the list of known names
    except (OSError, ValueError) as e:
        ap.error(f"--format {args.format}: {e}")
    try:
        records = list(read_jsonl(args.gold))
    except (OSError, ValueError) as e:
        ap.error(f"gold file {args.gold}: {e}")
    try:
        result = roundtrip(records, fmt, protocol=args.protocol, strict=args.match_strict)
    except ValueError as e:
        ap.error(f"{args.gold}: {e}")
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
