"""Readers on small hand-written fixtures in each release format, broken rows included."""
import pytest

from data_prep.leakage import check_no_leakage, drop_documents, evaluation_documents
from data_prep.predicate_detector import read_predicate_detector
from data_prep.qanom import read_qanom
from data_prep.qasrl_bank import aggregate_answers, read_qasrl_bank
from data_prep.qasrl_gs import read_qasrl_gs
from data_prep.records import DataFormatError, RECORD_KEYS, document_id, validate_record


def by_question(rec):
    return {qa["question"]: qa for qa in rec["qas"]}


def test_bank_aggregation_rule():
    j = lambda valid, *spans: {"isValid": valid, "spans": [list(s) for s in spans]}
    # two of three valid: kept; most-chosen span first, overlapping variants dropped
    assert aggregate_answers([j(True, (0, 2)), j(True, (1, 2)), j(True, (0, 2))]) == [[0, 2]]
    assert aggregate_answers([j(True, (0, 2)), j(False), j(True, (5, 7))]) == [[0, 2], [5, 7]]
    # one valid of three, or one of two: not a valid question
    assert aggregate_answers([j(True, (0, 2)), j(False), j(False)]) is None
    assert aggregate_answers([j(True, (0, 2)), j(False)]) is None
    # ties between overlapping spans: the shorter wins
    assert aggregate_answers([j(True, (3, 6)), j(True, (4, 6))]) == [[4, 6]]


def test_bank_reader(fixtures):
    recs, skipped, n = read_qasrl_bank(fixtures / "bank" / "dev.jsonl", "dev")
    assert n == 2 and skipped["malformed_sentence"] == 1
    assert skipped["invalid_question"] == 1  # "Where did someone jump?" has 1 valid of 3
    assert skipped["predicate_outside_sentence"] == 1
    assert skipped["span_outside_sentence"] == 1  # "What falls?": [0, 9) in 3 tokens
    fox = recs[0]
    assert list(fox) == list(RECORD_KEYS)
    qas = by_question(fox)
    assert set(qas) == {"Who jumped?", "What was jumped over?"}
    assert qas["Who jumped?"]["answers"] == [[0, 2]]
    assert qas["Who jumped?"]["slots"]["verb"] == "jumped"
    assert qas["What was jumped over?"]["slots"] == {"wh": "what", "aux": "was", "subj": "_", "verb": "jumped",
                                                    "obj": "_", "prep": "over", "obj2": "_"}
    assert qas["What was jumped over?"]["is_passive"] is True
    assert fox["verb_form"] == "jump" and fox["predicate_type"] == "verbal"
    assert recs[1]["qas"] == []  # its only question pointed outside the sentence
    for r in recs:
        validate_record(r)


def test_bank_missing_file(tmp_path):
    with pytest.raises(DataFormatError, match="not found"):
        read_qasrl_bank(tmp_path / "nope.jsonl.gz", "dev")


def test_gs_reader(fixtures):
    recs, skipped, n, merged = read_qasrl_gs(fixtures / "gs", "dev")
    assert n == 3 and merged == 1
    assert skipped["sentence_not_in_sentences_file"] == 1
    assert skipped["unparsable_answer_range"] == 1
    assert skipped["span_outside_sentence"] == 1
    assert skipped["answer_text_mismatch"] == 1  # "until noon" vs span "until morning"
    assert skipped["qa_without_usable_answer"] == 2
    assert skipped.kept["answer_text_encoding_glitch"] == 1  # "Garc?s" for "Garcés": kept
    fox = next(r for r in recs if r["sentence_id"].endswith("100:0:0"))
    qas = by_question(fox)
    assert qas["Who jumped?"]["answers"] == [[0, 2], [1, 2]]
    assert qas["Who jumped?"]["answer_texts"] == ["The fox", "fox"]
    assert qas["Where did someone jump?"]["answers"] == [[3, 6], [4, 6]]  # repeated question merged
    assert qas["Where did someone jump?"]["slots"]["verb"] == "jump"
    susp = next(r for r in recs if r["sentence_id"].endswith("200:1:0"))
    assert by_question(susp)["Who was suspended?"]["answer_texts"] == ["Garcés"]
    assert by_question(susp)["Who was suspended?"]["slots"]["verb"] == "suspended"
    for r in recs:
        validate_record(r)


def test_gs_verb_slot_from_question(fixtures, tmp_path):
    from data_prep.csv_qas import slots_from_row

    row = {"wh": "how long", "aux": "is", "subj": "something", "obj": "", "obj2": "", "prep": "",
           "verb_prefix": "being"}
    assert slots_from_row(row, "How long is something being suspended?")["verb"] == "being suspended"
    row = {"wh": "what", "aux": "might", "subj": "someone", "obj": "", "obj2": "do", "prep": "to",
           "verb_prefix": "not"}
    slots = slots_from_row(row, "What might someone not want to do?")
    assert (slots["verb"], slots["prep"], slots["obj2"]) == ("not want", "to", "do")
    # a question that does not end in its own object slot: the verb slot stops before the words that match
    row = {"wh": "who", "aux": "", "subj": "", "obj": "something", "obj2": "", "prep": "", "verb_prefix": ""}
    assert slots_from_row(row, "Who gave something?")["verb"] == "gave"
    assert slots_from_row(row, "Who gave someone?")["verb"] == "gave someone"


def test_gs_missing_column(tmp_path, fixtures):
    import shutil

    shutil.copytree(fixtures / "gs", tmp_path / "gs")
    path = tmp_path / "gs" / "gold" / "wikinews.dev.gold.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0].replace("answer_range", "range")] + lines[1:]) + "\n")
    with pytest.raises(DataFormatError, match="answer_range"):
        read_qasrl_gs(tmp_path / "gs", "dev")


def test_qanom_reader(fixtures):
    recs, candidates, skipped, n, merged = read_qanom(fixtures / "qanom" / "annot.dev.csv", "dev")
    assert n == 3
    assert skipped["unknown_is_verbal"] == 1
    assert skipped["predicate_outside_sentence"] == 1
    assert skipped["answer_text_mismatch"] == 1  # "early" vs "late"
    assert skipped.kept["answer_text_encoding_glitch"] == 1  # empty cell for the token "NA"
    decision = next(r for r in recs if r["predicate"] == "decision")
    assert decision["predicate_type"] == "nominal" and decision["verb_form"] == "decide"
    assert by_question(decision)["Who decided something?"]["answers"] == [[3, 5], [2, 5]]
    assert by_question(decision)["What did someone decide?"]["answer_texts"] == ["NA"]
    arrival = next(r for r in recs if r["predicate"] == "arrival")
    assert arrival["qas"] == []  # a predicate with no usable QA stays a record
    assert {(c["noun"], c["is_verbal"]) for c in candidates} == {("decision", True), ("court", False),
                                                                 ("arrival", True)}
    assert all(r["predicate"] != "court" for r in recs)  # non-predicates are candidates only
    for r in recs:
        validate_record(r)


def test_predicate_detector_reader(fixtures):
    sents, skipped = read_predicate_detector(fixtures / "qanom" / "predicates.txt", "dev")
    assert [s["tokens"] for s in sents] == [["The", "decision", "of", "the", "court"]]
    assert sents[0]["labels"] == ["O", "True", "O", "O", "False"]
    assert skipped["malformed_line"] == 2


def test_document_ids_and_leakage():
    assert document_id("Wiki1k:wikinews:675013:1:2") == "Wiki1k:wikinews:675013"
    assert document_id("TQA:T_0058_1") == "TQA:T_0058"
    train = [{"sentence_id": "Wiki1k:wikinews:1:0:0"}, {"sentence_id": "Wiki1k:wikinews:2:3:1"}]
    docs = evaluation_documents([{"sentence_id": "Wiki1k:wikinews:2:0:0"}])
    with pytest.raises(AssertionError, match="Wiki1k:wikinews:2"):
        check_no_leakage({"train.jsonl": train}, docs)
    check_no_leakage({"train.jsonl": drop_documents(train, docs)}, docs)
