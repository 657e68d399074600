"""The QASemConsistency reader: polarity, indexing, clean_answer_idx, broken rows, real counts."""
import json

import pytest

from data_prep.consistency import EXAMPLE_KEYS, read_consistency, summarize
from data_prep.records import DataFormatError


def _by_id(examples):
    return {e["example_id"]: e for e in examples}


def test_fixture_examples_and_skips(fixtures):
    path = fixtures / "consistency_small.jsonl"
    examples, skipped = read_consistency(path, "dev")
    assert len(examples) == 13
    assert all(set(e) == set(EXAMPLE_KEYS) for e in examples)
    assert dict(skipped) == {"answer_outside_text": 1, "labels_missing": 1, "response_without_qas": 1,
                             "empty_premise": 1}
    # every skip names its file and line
    assert all(str(path) in w for ws in skipped.examples.values() for w in ws)
    assert any(":4" in w for w in skipped.examples["response_without_qas"])
    ex = _by_id(examples)
    # majority of 3 votes, 1 = NOT supported in the file; supported = 1 - label
    e = ex["cliff:1:bart:0"]
    assert (e["label"], e["supported"], e["votes"]) == (0, 1, [0, 0, 1])
    e = ex["cliff:1:bart:2"]
    assert (e["label"], e["supported"]) == (1, 0)
    assert e["hypothesis"] == "where did someone open something? in York"
    assert e["answer_span"] == [5, 7] and e["dataset"] == "cliff"
    assert e["response_id"] == "cliff:1:bart" and e["group_id"] == "cliff:1"


def test_factscore_indexes_concatenation_and_clean_idx(fixtures):
    examples, _ = read_consistency(fixtures / "consistency_small.jsonl", "dev")
    ex = _by_id(examples)
    e = ex["factscore:Ada Lovelace:ChatGPT:0"]
    assert e["answer_span"] == [0, 2]  # clean_answer_idx wins over answer_idx "0-6"
    e = ex["factscore:Ada Lovelace:ChatGPT:1"]
    toks = e["summary_tokens"]
    assert toks[e["answer_span"][0]:e["answer_span"][1]] == ["a", "novel"]  # flattened indexing
    assert e["sentence_index"] == 1 and e["predicate_index"] == 7
    assert e["premise_tokens"][:2] == ["Ada", "Lovelace"]


def test_verifiability_flat_summary(fixtures):
    examples, _ = read_consistency(fixtures / "consistency_small.jsonl", "dev")
    ver = [e for e in examples if e["dataset"] == "verifiability"]
    assert len(ver) == 3 and all(e["sentence_index"] == 0 for e in ver)
    assert [e["supported"] for e in ver] == [1, 0, 1]
    s = summarize(examples, _)
    assert s["by_dataset"]["verifiability"] == {"responses": 1, "qas": 3}


def test_structural_errors_raise_with_path(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(DataFormatError, match="nope.jsonl"):
        read_consistency(missing, "dev")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"source": [], "summary": []}\n')
    with pytest.raises(DataFormatError, match="bad.jsonl:1"):
        read_consistency(bad, "dev")
    bad.write_text("not json\n")
    with pytest.raises(DataFormatError, match="bad.jsonl:1"):
        read_consistency(bad, "dev")


def test_tie_and_garbage_votes_are_skipped(tmp_path):
    row = {"source_id": 1, "dataset": "cliff", "model": "m", "source": ["a", "b"], "summary": [["a", "b"]],
           "qas": [{"qa_id": 0, "question": "what?", "answer": "a", "answer_idx": "0-1", "annotations": [0, 1]},
                   {"qa_id": 1, "question": "what?", "answer": "a", "answer_idx": "0-1", "annotations": [0, 2, 1]},
                   {"qa_id": 2, "question": "what?", "answer": "a", "answer_idx": "x-y", "annotations": [0, 0, 0]},
                   {"qa_id": 3, "question": "what?", "answer": "b", "answer_idx": "1-2", "annotations": [1, 1, 0]}]}
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps(row) + "\n")
    examples, skipped = read_consistency(p, "test")
    assert len(examples) == 1 and examples[0]["label"] == 1
    assert dict(skipped) == {"labels_missing": 2, "answer_idx_unparsable": 1}


@pytest.mark.parametrize("split,responses,qas", [("dev", 148, 1542), ("test", 151, 1556)])
def test_real_counts(data_dir, split, responses, qas):
    path = data_dir / "qasem-consistency" / f"{split}.jsonl"
    examples, skipped = read_consistency(path, split)
    s = summarize(examples, skipped)
    assert (s["responses"], s["qas"]) == (responses, qas)
    assert dict(skipped) == {}
    # about a third of the QAs are not supported (the file's polarity, majority of 3 votes)
    assert 0.3 < s["not_supported"] / s["qas"] < 0.37
    # every answer span lies in the flattened summary and matches its text up to spacing / accents
    assert dict(skipped.warnings) == {}
    assert all(0 <= e["answer_span"][0] < e["answer_span"][1] <= len(e["summary_tokens"]) for e in examples)


def test_every_skip_reason_and_warning_is_counted_where_it_happens(tmp_path):
    def qa(**kw):
        return {"question": "who?", "answer": "c", "answer_idx": "2-3", "annotations": [0, 0, 0], **kw}

    rows = [
        {"source_id": 1, "dataset": "other", "model": "m", "source": ["a"], "summary": [["a"]], "qas": [{}]},
        {"source_id": 2, "dataset": "cliff", "model": "m", "source": "a b", "summary": [["a"], "b"], "qas": [{}]},
        {"source_id": 3, "dataset": "cliff", "model": "m", "source": ["a"], "summary": [], "qas": [{}]},
        {"source_id": 4, "dataset": "cliff", "model": "m", "source": ["a", 5], "summary": [["a", "b"], ["c", "d"]],
         "qas": ["junk", qa(qa_id=7, question=" "), qa(answer=3),
                 qa(qa_id=8, answer="X", answer_idx=[2, 4], predicate_idx="9"),       # kept, 2 warnings
                 qa(answer="b", answer_idx=" 1 - 2 ", clean_answer_idx=None, predicate_idx="-1"),  # kept
                 qa(clean_answer_idx="bad", predicate_idx=2),                          # kept: answer_idx used
                 qa(annotations=[0, 0, 0, 1, 1]), qa(annotations=[0, 1]),  # 5 votes: kept; a tie: not
                 qa(answer_idx="3-2"), qa(answer_idx=["x", 2]),
                 qa(annotations="nope")]},
        {"source_id": 4, "dataset": "cliff", "model": "m", "source": ["a"], "summary": ["a", "b"],
         "qas": [qa(answer="b", answer_idx="1-2")]},                                    # duplicate response id
        {"source_id": 5, "dataset": "verifiability", "model": "m", "source": None, "summary": ["a"], "qas": [{}]},
        {"source_id": 6, "dataset": "factscore", "model": "m", "source": ["a"], "summary": [["a"]], "qas": None},
    ]
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(r) + "\n\n" for r in rows))  # blank lines are not rows
    examples, skipped = read_consistency(p, "dev")
    assert len(examples) == 5
    assert dict(skipped) == {"unknown_dataset": 1, "malformed_summary": 1, "empty_summary": 1, "malformed_qa": 1,
                             "empty_question_or_answer": 2, "answer_outside_text": 1, "answer_idx_unparsable": 1,
                             "labels_missing": 2, "empty_premise": 1, "response_without_qas": 1}
    assert dict(skipped.warnings) == {"answer_text_differs_from_span": 1, "predicate_outside_text": 4,
                                      "duplicate_response_id": 1}
    assert skipped.examples["malformed_qa"] == [f"{p}:7 qa 0"]
    assert skipped.examples["response_without_qas"] == [f"{p}:13"]
    assert skipped.warnings.examples["duplicate_response_id"] == [f"{p}:9"]
    ex = _by_id(examples)
    assert ex["cliff:4:m:8"]["answer_span"] == [2, 4] and ex["cliff:4:m:8"]["predicate_index"] == -1
    assert ex["cliff:4:m:4"]["answer_span"] == [1, 2] and ex["cliff:4:m:4"]["sentence_index"] == 0
    assert ex["cliff:4:m:5"]["predicate_index"] == 2 and ex["cliff:4:m:5"]["sentence_index"] == 1
    assert ex["cliff:4:m#L9:0"]["premise_tokens"] == ["a"]
    assert ex["cliff:4:m:4"]["premise_tokens"] == ["a", "5"]
