"""Real-data checks over ../shared/data: published counts, the offline set and leakage."""
import json

import pytest

from data_prep.build import TRAINING_FILES, check_leakage
from data_prep.records import document_id, read_jsonl, validate_record


@pytest.fixture(scope="module")
def stats(processed_dir):
    return json.loads((processed_dir / "stats.json").read_text())


@pytest.mark.parametrize("source,split,sentences,predicates,questions", [
    ("qanom", "train", 7114, 9226, 15871),      # QANom paper / release readme
    ("qasrl-gs", "dev", 1000, 2448, 7183),
    ("qasrl-gs", "test", 999, 2450, 7097),
    ("qasrl-bank", "dev", 9079, 17581, None),
    ("qasrl-bank", "test", 10457, 20613, None),
])
def test_published_counts(stats, source, split, sentences, predicates, questions):
    s = stats[source][split]
    assert (s["sentences"], s["predicates"]) == (sentences, predicates)
    if questions is not None:
        assert s["questions"] == questions


def test_bank_questions_add_up_to_the_release(stats):
    # every question of the release is either kept or counted as invalid by the aggregation rule
    for split, total in (("dev", 38487), ("test", 45389)):
        s = stats["qasrl-bank"][split]
        assert s["questions"] + s["skipped"].get("invalid_question", 0) == total


def test_offline_set_size_and_no_leakage(stats, processed_dir):
    off = stats["qasrl-bank"]["train-offline"]
    assert 14000 <= off["sentences"] <= 14600 and 25000 <= off["predicates"] <= 27000
    check_leakage(processed_dir)  # raises on any evaluation document in a training file
    gs_docs = {document_id(r["sentence_id"]) for r in read_jsonl(processed_dir / "qasrl-gs.test.jsonl")}
    offline_docs = {document_id(r["sentence_id"]) for r in read_jsonl(processed_dir / TRAINING_FILES[1])}
    assert gs_docs and not gs_docs & offline_docs


def test_every_record_is_valid(processed_dir):
    for name in ("qasrl-gs.test", "qanom.test", "qanom.train"):
        for rec in read_jsonl(processed_dir / f"{name}.jsonl"):
            validate_record(rec)


@pytest.mark.parametrize("fmt", ["qasem_parser", "klein2022"])
@pytest.mark.parametrize("name,floor", [("qasrl-gs.test", 0.999), ("qanom.test", 0.998)])
def test_format_ceiling(processed_dir, fmt, name, floor):
    """gold -> text -> decode -> align must reproduce the gold spans (naive alignment: 0.994 / 0.986)."""
    from evaluation.roundtrip import roundtrip
    from models.parser.qa_format import get_format

    result = roundtrip(list(read_jsonl(processed_dir / f"{name}.jsonl")), get_format(fmt))
    assert result["ua"]["f1"] >= floor
    assert result["decode"]["malformed"] == 0 and result["decode"]["unaligned"] == 0
