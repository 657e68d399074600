"""Build every processed file from the raw releases:

    <processed_dir>/<source>.<split>.jsonl      canonical records (qasrl-bank, qasrl-gs, qanom)
    <processed_dir>/qasrl-bank.train-offline.jsonl   Bank dev+test minus every evaluation document
    <processed_dir>/consistency.<split>.jsonl   QASemConsistency entailment examples
    <processed_dir>/qanom-candidates.<split>.jsonl, qanom-predicates.<split>.jsonl  predicate detection
    <processed_dir>/qasrl-bank.train.jsonl      Bank train, when qasrl-bank-v2/orig/train.jsonl.gz is there
                                                (python -m data_prep.download fetches it; data=joint_release)
    <processed_dir>/stats.json                  {source: {split: {sentences, predicates, questions, skipped,
                                                 skip_examples: {reason: [file:line, ...]}}}}

Everything is written into a staging folder beside <processed_dir> and moved into place only when
the whole build succeeded: a failed build leaves the earlier files as they were. A read error
(a truncated or corrupt file) fails the build, naming the file and line.

Run: python -m data_prep.build paths.data_dir=../shared/data
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

import hydra
from omegaconf import DictConfig

from data_prep.leakage import check_no_leakage, drop_documents, evaluation_documents
from data_prep.predicate_detector import read_predicate_detector
from data_prep.qanom import read_qanom
from data_prep.qasrl_bank import read_qasrl_bank
from data_prep.qasrl_gs import read_qasrl_gs
from data_prep.records import DataFormatError, SkipCounter, write_jsonl
from data_prep.stats import record_stats, stats_table

log = logging.getLogger(__name__)

OFFLINE_SPLIT = "train-offline"
EXPANDED_SPLIT = "train-offline-expanded"  # the same documents, Bank dev from its expanded release
# The files a model may be trained on; `check_leakage` reads these back from disk.
TRAINING_FILES = ("qanom.train.jsonl", f"qasrl-bank.{OFFLINE_SPLIT}.jsonl")
EVALUATION_FILES = ("qasrl-gs.dev.jsonl", "qasrl-gs.test.jsonl", "qanom.dev.jsonl", "qanom.test.jsonl")
BANK_TRAIN = Path("qasrl-bank-v2") / "orig" / "train.jsonl.gz"  # not in the offline copy; optional
# The raw file each processed file is built from (under paths.data_dir), for "missing data" errors.
RAW_INPUTS = {"qasrl-bank.train": BANK_TRAIN, "qasrl-bank.dev": "qasrl-bank-v2/orig/dev.jsonl.gz",
              "qasrl-bank.test": "qasrl-bank-v2/orig/test.jsonl.gz",
              f"qasrl-bank.{EXPANDED_SPLIT}": "qasrl-bank-v2/expanded/dev.jsonl.gz",
              "qasrl-gs.dev": "qasrl-gs/gold", "qasrl-gs.test": "qasrl-gs/gold",
              "qanom.train": "qanom/annot.train.csv", "qanom.dev": "qanom/annot.dev.csv",
              "qanom.test": "qanom/annot.test.csv", "consistency.dev": "qasem-consistency/dev.jsonl",
              "consistency.test": "qasem-consistency/test.jsonl"}


def build(data_dir: str | Path, out_dir: str | Path, sources=("qasrl-bank", "qasrl-gs", "qanom",
                                                              "consistency", "predicate-detector")) -> dict:
    """Build into a staging folder, then move every file into `out_dir` (stats.json last)."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    if not data_dir.is_dir():
        raise DataFormatError(f"data directory {data_dir.resolve()} does not exist "
                              "(set paths.data_dir=DIR or QASEM_DATA_DIR; python -m data_prep.download fetches it)")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.building-", dir=out_dir.parent))
    try:
        stats = _build(data_dir, staging, tuple(sources))
        _move_into_place(staging, out_dir, stats)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return stats


def _move_into_place(staging: Path, out_dir: Path, stats: dict) -> None:
    """Replace each built file in `out_dir` (files of sources not rebuilt stay, and keep their
    stats), then write the merged stats.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in sorted(staging.glob("*.jsonl")):
        os.replace(f, out_dir / f.name)
    old = out_dir / "stats.json"
    merged = {**(json.loads(old.read_text()) if old.exists() else {}), **stats}
    tmp = out_dir / ".stats.json.tmp"
    tmp.write_text(json.dumps(merged, indent=2) + "\n")
    os.replace(tmp, old)


def _build(data_dir: Path, out_dir: Path, sources: tuple[str, ...]) -> dict:
    stats: dict = {}
    records: dict[tuple[str, str], list[dict]] = {}

    def emit(source, split, recs, n_sentences, skipped, merged=0):
        write_jsonl(out_dir / f"{source}.{split}.jsonl", recs)
        records[(source, split)] = recs
        stats.setdefault(source, {})[split] = record_stats(recs, n_sentences, skipped)
        if merged:
            stats[source][split]["merged_repeated_questions"] = merged

    if "qasrl-bank" in sources:
        for split in ("dev", "test"):
            recs, skipped, n = read_qasrl_bank(data_dir / "qasrl-bank-v2" / "orig" / f"{split}.jsonl.gz", split)
            emit("qasrl-bank", split, recs, n, skipped)
        if (data_dir / BANK_TRAIN).exists():  # the published recipe's training set (data=joint_release)
            recs, skipped, n = read_qasrl_bank(data_dir / BANK_TRAIN, "train")
            emit("qasrl-bank", "train", recs, n, skipped)
        else:
            log.info("no %s: qasrl-bank.train.jsonl is not built (python -m data_prep.download fetches it)",
                     data_dir / BANK_TRAIN)
    if "qasrl-gs" in sources:
        for split in ("dev", "test"):
            recs, skipped, n, merged = read_qasrl_gs(data_dir / "qasrl-gs", split, data_dir)
            emit("qasrl-gs", split, recs, n, skipped, merged)
    if "qanom" in sources:
        for split in ("train", "dev", "test"):
            recs, candidates, skipped, n, merged = read_qanom(data_dir / "qanom" / f"annot.{split}.csv", split)
            emit("qanom", split, recs, n, skipped, merged)
            write_jsonl(out_dir / f"qanom-candidates.{split}.jsonl", candidates)
    if {"qasrl-bank", "qasrl-gs", "qanom"} <= set(sources):
        eval_docs = evaluation_documents(*(records[k] for k in [("qasrl-gs", "dev"), ("qasrl-gs", "test"),
                                                                 ("qanom", "dev"), ("qanom", "test")]))
        offline = [dict(r, split=OFFLINE_SPLIT) for split in ("dev", "test")
                   for r in drop_documents(records[("qasrl-bank", split)], eval_docs)]
        emit("qasrl-bank", OFFLINE_SPLIT, offline, None, SkipCounter())
        # The same documents with Bank dev's expanded annotation (more validated questions per verb),
        # for measuring whether denser training labels raise recall (data=offline_expanded).
        expanded_dev = data_dir / "qasrl-bank-v2" / "expanded" / "dev.jsonl.gz"
        if expanded_dev.exists():
            recs, skipped, _ = read_qasrl_bank(expanded_dev, "dev")
            expanded = [dict(r, split=EXPANDED_SPLIT) for r in drop_documents(recs, eval_docs)]
            expanded += [dict(r, split=EXPANDED_SPLIT) for r in drop_documents(records[("qasrl-bank", "test")], eval_docs)]
            emit("qasrl-bank", EXPANDED_SPLIT, expanded, None, skipped)
        check_leakage(out_dir)
    if "consistency" in sources:
        from data_prep.consistency import read_consistency

        for split in ("dev", "test"):
            examples, skipped = read_consistency(data_dir / "qasem-consistency" / f"{split}.jsonl", split)
            write_jsonl(out_dir / f"consistency.{split}.jsonl", examples)
            stats.setdefault("consistency", {})[split] = {
                "sentences": len({e["response_id"] for e in examples}),  # responses
                "predicates": len({(e["response_id"], e["predicate_index"]) for e in examples}),
                "questions": len(examples),
                "skipped": dict(sorted(skipped.items())),
                "skip_examples": skipped.examples,
            }
    if "predicate-detector" in sources:
        for split in ("train", "dev", "test"):
            sents, skipped = read_predicate_detector(data_dir / "qanom" / "predicate-detector" / f"{split}.txt", split)
            write_jsonl(out_dir / f"qanom-predicates.{split}.jsonl", sents)
            stats.setdefault("qanom-predicates", {})[split] = {
                "sentences": len(sents), "predicates": sum(s["labels"].count("True") for s in sents),
                "questions": 0, "skipped": dict(skipped), "skip_examples": skipped.examples}
    return stats


def check_leakage(out_dir: str | Path) -> None:
    """Read the training and evaluation files back from disk and fail on any shared document."""
    from data_prep.records import read_jsonl

    out_dir = Path(out_dir)
    eval_docs = evaluation_documents(*(list(read_jsonl(out_dir / f)) for f in EVALUATION_FILES))
    files = [f for f in TRAINING_FILES + (f"qasrl-bank.{EXPANDED_SPLIT}.jsonl", "qasrl-bank.train.jsonl")
             if (out_dir / f).exists()]
    check_no_leakage({f: list(read_jsonl(out_dir / f)) for f in files}, eval_docs)
    log.info("leakage check passed: %d evaluation documents, none in %s", len(eval_docs), ", ".join(files))


@hydra.main(version_base="1.3", config_path="../conf", config_name="build")
def main(cfg: DictConfig) -> None:
    try:
        stats = build(cfg.paths.data_dir, cfg.paths.processed_dir, tuple(cfg.sources))
    except DataFormatError as e:  # the message names the file (and line): a traceback adds nothing
        log.error("build failed, %s left as it was: %s", Path(cfg.paths.processed_dir).resolve(), e)
        sys.exit(1)
    print(stats_table(stats))
    print(f"\nwrote {Path(cfg.paths.processed_dir).resolve()}/stats.json")


if __name__ == "__main__":
    main()
