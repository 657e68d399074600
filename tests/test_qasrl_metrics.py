"""Hand-computed checks of the QA-SRL metrics (metrics/qasrl.py, metrics/roles.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from metrics.qasrl import evaluate_predicate, evaluate_records, iou, match_spans, prf
from metrics.roles import UNGRAMMATICAL, question_to_sem_role

REPO = Path(__file__).resolve().parents[1]


def slots(wh, aux="_", subj="_", verb="saw", obj="_", prep="_", obj2="_"):
    return {"wh": wh, "aux": aux, "subj": subj, "verb": verb, "obj": obj, "prep": prep, "obj2": obj2}


def qa(*answers, wh="what", passive=False, **slot_values):
    """A QA whose question text does not matter here; its role comes from the slots."""
    return {"question": "?", "slots": slots(wh, **slot_values), "is_passive": passive,
            "is_negated": False, "answers": [list(a) for a in answers],
            "answer_texts": ["x"] * len(answers)}


def record(qas, sid="s1", idx=1, source="qanom", ptype="nominal"):
    return {"sentence_id": sid, "tokens": ["t"] * 20, "predicate_index": idx, "predicate": "t",
            "predicate_type": ptype, "verb_form": "t", "qas": qas, "source": source, "split": "dev"}


def counts(metric):
    return metric["tp"], metric["fp"], metric["fn"]


# ----------------------------------------------------------------------------- IOU / matching

def test_iou_values():
    assert iou((0, 10), (7, 10)) == pytest.approx(0.3)
    assert iou((2, 5), (3, 6)) == pytest.approx(0.5)      # overlap 2, union 4
    assert iou((0, 2), (1, 6)) == pytest.approx(1 / 6)    # overlap 1, union 6
    assert iou((0, 2), (2, 4)) == 0.0                     # adjacent, end-exclusive
    assert iou((3, 3), (3, 3)) == 0.0                     # degenerate span: no division by zero


def test_iou_exactly_at_threshold():
    # [0,10) vs [7,10): 3/10, exactly the QANom threshold.
    assert match_spans([(7, 10)], [(0, 10)]) == [(0, 0)]
    assert match_spans([(7, 10)], [(0, 10)], strict=True) == []
    gold = [record([qa((0, 10))])]
    pred = [record([qa((7, 10))])]
    assert counts(evaluate_records(gold, pred)["ua"]) == (1, 0, 0)
    assert counts(evaluate_records(gold, pred, strict=True)["ua"]) == (0, 1, 1)


def test_partial_overlaps():
    # sys [2,5) ~ gold [3,6) at 0.5 matches; sys [0,2) ~ gold [10,15) never overlaps.
    gold = [record([qa((3, 6)), qa((10, 15))])]
    pred = [record([qa((2, 5)), qa((0, 2))])]
    res = evaluate_records(gold, pred)
    assert counts(res["ua"]) == (1, 1, 1)
    assert res["ua"]["precision"] == 0.5 and res["ua"]["recall"] == 0.5 and res["ua"]["f1"] == 0.5


def test_duplicate_gold_spans_count_in_totals():
    # Two gold QAs share the span [0,2): one sys span can match only one of them.
    gold = [record([qa((0, 2)), qa((0, 2), wh="who")])]
    pred = [record([qa((0, 2))])]
    assert counts(evaluate_records(gold, pred)["ua"]) == (1, 0, 1)
    # And the other way round: two identical sys spans, one gold span.
    assert counts(evaluate_records(pred, gold)["ua"]) == (1, 1, 0)


def test_greedy_vs_maximum_matching():
    # gold x=[0,10), y=[0,6); sys a=[0,10), b=[5,10).
    # IOU: a-x 1.0, a-y 0.6, b-x 0.5, b-y 0.1. Greedy takes a-x, which blocks both others;
    # the maximum matching takes a-y and b-x.
    sys_spans, gold_spans = [(0, 10), (5, 10)], [(0, 10), (0, 6)]
    assert match_spans(sys_spans, gold_spans, "qanom") == [(0, 0)]
    assert match_spans(sys_spans, gold_spans, "gs") == [(0, 1), (1, 0)]
    gold = [record([qa((0, 10)), qa((0, 6))])]
    pred = [record([qa((0, 10)), qa((5, 10))])]
    assert counts(evaluate_records(gold, pred, protocol="qanom")["ua"]) == (1, 1, 1)
    assert counts(evaluate_records(gold, pred, protocol="gs")["ua"]) == (2, 0, 0)


def test_gs_threshold_is_half():
    # IOU 0.4 matches under qanom (>= 0.3) but not under gs (>= 0.5).
    assert match_spans([(1, 5)], [(0, 3)], "qanom") == [(0, 0)]   # overlap 2, union 5
    assert match_spans([(1, 5)], [(0, 3)], "gs") == []
    assert match_spans([(5, 10)], [(0, 10)], "gs") == [(0, 0)]    # exactly 0.5
    assert match_spans([(5, 10)], [(0, 10)], "gs", strict=True) == []


def test_unknown_protocol():
    with pytest.raises(ValueError, match="unknown protocol"):
        match_spans([(0, 1)], [(0, 1)], "srl")
    with pytest.raises(ValueError, match="unknown protocol"):
        evaluate_records([], [], protocol="srl")


def test_prf_zero_denominators():
    assert prf(0, 0, 0) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 0, "fn": 0}
    assert prf(1, 3, 1)["precision"] == 0.25
    assert prf(1, 3, 1)["recall"] == 0.5
    assert prf(1, 3, 1)["f1"] == pytest.approx(2 * 0.25 * 0.5 / 0.75)


# ----------------------------------------------------------------------------- predicates

def test_empty_predictions():
    gold = [record([qa((0, 2)), qa((4, 6), (8, 9))])]
    res = evaluate_records(gold, [record([])])
    assert counts(res["ua"]) == (0, 0, 3)
    assert counts(res["la"]) == (0, 0, 3)
    assert counts(res["role"]) == (0, 0, 2)
    assert res["ua"]["precision"] == 0.0 and res["ua"]["f1"] == 0.0
    assert res["missing_predicates"] == 0


def test_missing_predicate():
    gold = [record([qa((0, 2))], idx=1), record([qa((4, 6)), qa((8, 9))], idx=5)]
    pred = [record([qa((0, 2))], idx=1)]
    res = evaluate_records(gold, pred)
    assert counts(res["ua"]) == (1, 0, 2)
    assert counts(res["role"]) == (1, 0, 2)
    assert res["predicates"] == 2 and res["missing_predicates"] == 1
    assert res["extra_predicates"] == 0


def test_extra_predicted_predicate():
    gold = [record([qa((0, 2))], idx=1)]
    pred = [record([qa((0, 2))], idx=1), record([qa((4, 6), (7, 8))], sid="s2", idx=3)]
    res = evaluate_records(gold, pred)
    assert counts(res["ua"]) == (1, 2, 0)
    assert counts(res["role"]) == (1, 1, 0)
    assert res["predicates"] == 1 and res["extra_predicates"] == 1


def test_duplicate_gold_record_names_key():
    gold = [record([qa((0, 2))], sid="s9", idx=4), record([], sid="s9", idx=4)]
    with pytest.raises(ValueError, match=r"s9.*4"):
        evaluate_records(gold, [])


def test_breakdowns():
    gold = [record([qa((0, 2))], sid="a", source="qasrl_gs", ptype="verbal"),
            record([qa((3, 5))], sid="b", source="qanom", ptype="nominal")]
    pred = [record([qa((0, 2))], sid="a"), record([qa((9, 10))], sid="b")]
    res = evaluate_records(gold, pred)
    assert counts(res["by_source"]["qasrl_gs"]["ua"]) == (1, 0, 0)
    assert counts(res["by_source"]["qanom"]["ua"]) == (0, 1, 1)
    assert counts(res["by_predicate_type"]["verbal"]["ua"]) == (1, 0, 0)
    assert counts(res["by_predicate_type"]["nominal"]["ua"]) == (0, 1, 1)
    assert res["by_source"]["qanom"]["predicates"] == 1
    assert counts(res["ua"]) == (1, 1, 1)


# ----------------------------------------------------------------------------- LA / role

def test_la_same_span_different_roles():
    # Gold "Who saw something?" (active, R0) vs sys "What was seen?" (passive, R1), same span.
    gold = [record([qa((0, 2), wh="who", obj="something")])]
    pred = [record([qa((0, 2), wh="what", aux="was", verb="seen", passive=True)])]
    res = evaluate_records(gold, pred)
    assert counts(res["ua"]) == (1, 0, 0)
    assert counts(res["la"]) == (0, 1, 1)
    # The same question on the sys side is a labeled match.
    assert counts(evaluate_records(gold, gold)["la"]) == (1, 0, 0)


def test_la_mixed():
    # Two matches, one with the right role (R1 vs R1), one wrong (where vs when); one sys miss.
    gold = [record([qa((0, 2), wh="what", aux="did", subj="someone"),
                    qa((5, 8), wh="where", aux="did", subj="someone")])]
    pred = [record([qa((0, 2), wh="what", aux="was", verb="seen", passive=True),
                    qa((5, 8), wh="when", aux="did", subj="someone"),
                    qa((12, 13), wh="why", aux="did", subj="someone")])]
    res = evaluate_records(gold, pred)
    assert counts(res["ua"]) == (2, 1, 0)
    assert counts(res["la"]) == (1, 2, 1)


def test_role_metric_follows_reference_alignment():
    # One sys QA answering two gold QAs: each gold QA aligns to exactly one sys QA (2 TP),
    # but the sys QA aligns to two gold QAs, so the reference counts it as an FP.
    gold_qas = [qa((0, 2)), qa((5, 7), wh="who")]
    sys_qas = [qa((0, 2), (5, 7))]
    assert evaluate_predicate(gold_qas, sys_qas)["role"].__dict__ == {"tp": 2, "fp": 1, "fn": 0}
    # The converse: one gold QA split over two sys QAs is an FN, and neither sys QA is an FP.
    assert evaluate_predicate(sys_qas, gold_qas)["role"].__dict__ == {"tp": 0, "fp": 0, "fn": 1}
    # One-to-one QAs, one of them unanswered by the system.
    res = evaluate_predicate([qa((0, 2)), qa((5, 7))], [qa((0, 2)), qa((10, 12))])
    assert res["role"].__dict__ == {"tp": 1, "fp": 1, "fn": 1}


def test_a_qa_repeated_word_for_word_is_one_role_as_in_the_reference():
    """The reference keys roles by value: identical QAs are one role, on either side."""
    gold_qas = [qa((0, 2)), qa((5, 7), wh="who")]
    once = evaluate_predicate(gold_qas, [qa((0, 2)), qa((5, 7), wh="who")])
    twice = evaluate_predicate(gold_qas, [qa((0, 2)), qa((0, 2)), qa((5, 7), wh="who")])
    assert once["role"].__dict__ == twice["role"].__dict__ == {"tp": 2, "fp": 0, "fn": 0}
    assert counts(twice["ua"].__dict__) == (2, 1, 0)  # UA still counts the repeated span, as the reference does
    gold_twice = evaluate_predicate(gold_qas + [qa((5, 7), wh="who")], [qa((0, 2)), qa((5, 7), wh="who")])
    assert gold_twice["role"].__dict__ == {"tp": 2, "fp": 0, "fn": 0}
    # the same question with another (here unmatched) answer is another role: a false positive
    other = evaluate_predicate(gold_qas, [qa((0, 2)), qa((0, 3)), qa((5, 7), wh="who")])
    assert other["role"].__dict__ == {"tp": 2, "fp": 1, "fn": 0}


def test_repeated_qas_on_real_gs_test_leave_role_counts_unchanged(processed_dir):
    """GS test with every third QA repeated: role TP / FP / FN equal those of the plain copy
    (they did not before: 4,191 vs the reference's 4,521 on the issue's perturbed set)."""
    import copy

    from data_prep.records import read_jsonl

    gold = list(read_jsonl(processed_dir / "qasrl-gs.test.jsonl"))
    pred = copy.deepcopy(gold)
    for rec in pred:
        for qa_ in list(rec["qas"])[::3]:
            rec["qas"].append(copy.deepcopy(qa_))
    assert sum(len(r["qas"]) for r in pred) - sum(len(r["qas"]) for r in gold) > 2000
    plain, repeated = evaluate_records(gold, gold), evaluate_records(gold, pred)
    assert counts(repeated["role"]) == counts(plain["role"]) and plain["role"]["fp"] == 0


@pytest.mark.parametrize("question, slot_values, passive, role", [
    ("Who saw something?", dict(wh="who", obj="something"), False, "R0"),
    ("What did someone see?", dict(wh="what", aux="did", subj="someone", verb="see"), False, "R1"),
    ("What was seen?", dict(wh="what", aux="was", verb="seen"), True, "R1"),
    ("What was something seen by?", dict(wh="what", aux="was", subj="something", verb="seen",
                                         prep="by"), True, "R0"),
    ("Who was something given to?", dict(wh="who", aux="was", subj="something", verb="given",
                                         prep="to"), True, "R2_to"),
    ("Who did someone give something to?", dict(wh="who", aux="did", subj="someone", verb="give",
                                                obj="something", prep="to"), False, "R2_to"),
    ("What did someone give someone?", dict(wh="what", aux="did", subj="someone", verb="give",
                                            obj="someone"), False, "R2"),
    ("What did someone tell someone to do?", dict(wh="what", aux="did", subj="someone", verb="tell",
                                                  obj="someone", prep="to", obj2="do"), False, "R2_to"),
    ("What did someone give someone to something?", dict(wh="what", aux="did", subj="someone",
                                                         verb="give", obj="someone", prep="to",
                                                         obj2="something"), False, UNGRAMMATICAL),
    ("Where did someone go?", dict(wh="where", aux="did", subj="someone", verb="go"), False, "where"),
    ("Where did someone come from?", dict(wh="where", aux="did", subj="someone", verb="come",
                                          prep="from"), False, "where_from"),
    ("When did someone go to something?", dict(wh="when", aux="did", subj="someone", verb="go",
                                               prep="to", obj2="something"), False, "when"),
    ("How much was something sold?", dict(wh="how much", aux="was", subj="something",
                                          verb="sold"), True, "how much"),
    ("Why was something seen?", dict(wh="why", aux="was", subj="something", verb="seen"), True, "why"),
    ("Who saw?", dict(wh="Who"), False, "R0"),           # capitalised wh-word
    ("Hmm saw?", dict(wh="hmm"), False, UNGRAMMATICAL),  # not a QA-SRL wh-word
])
def test_role_mapping(question, slot_values, passive, role):
    assert question_to_sem_role(slots(**slot_values), passive) == role, question


def test_role_mapping_empty_slot_spellings():
    # "_" (records) and "" (QANom CSV) both mean empty.
    assert question_to_sem_role(dict(slots("who"), obj=""), False) == "R0"
    assert question_to_sem_role(dict(slots("what"), subj="someone", obj=""), False) == "R1"


# ----------------------------------------------------------------------------- CLI

def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "evaluation.qasrl", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli(tmp_path):
    gold = write(tmp_path / "gold.jsonl", [record([qa((0, 10)), qa((0, 6))], source="qasrl_gs",
                                                  ptype="verbal")])
    pred = write(tmp_path / "pred.jsonl", [record([qa((0, 10)), qa((5, 10))])])
    proc = run_cli(gold, pred)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    for metric in ("ua", "la", "role"):
        assert set(res[metric]) == {"precision", "recall", "f1", "tp", "fp", "fn"}
    assert counts(res["ua"]) == (1, 1, 1)
    assert set(res["by_source"]) == {"qasrl_gs"}
    assert set(res["by_predicate_type"]) == {"verbal", "nominal"}
    assert res["predicates"] == 1 and res["extra_predicates"] == 0

    res = json.loads(run_cli(gold, pred, "--protocol", "gs").stdout)
    assert counts(res["ua"]) == (2, 0, 0)


def test_cli_match_strict(tmp_path):
    gold = write(tmp_path / "gold.jsonl", [record([qa((0, 10))])])
    pred = write(tmp_path / "pred.jsonl", [record([qa((7, 10))])])
    assert counts(json.loads(run_cli(gold, pred).stdout)["ua"]) == (1, 0, 0)
    assert counts(json.loads(run_cli(gold, pred, "--match-strict").stdout)["ua"]) == (0, 1, 1)


def test_cli_errors(tmp_path):
    gold = write(tmp_path / "gold.jsonl", [record([qa((0, 2))])])
    proc = run_cli(gold, tmp_path / "nope.jsonl")
    assert proc.returncode == 2 and "nope.jsonl" in proc.stderr and proc.stdout == ""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sentence_id": "s1",\n')
    proc = run_cli(bad, gold)
    assert proc.returncode == 2 and "bad.jsonl" in proc.stderr and "JSON" in proc.stderr


# ---------------------------------------------------------------------------- invalid predictions
def _rec(qas, tokens=("A", "man", "died", "of", "measles", ".")):
    return {"sentence_id": "s1", "predicate_index": 2, "tokens": list(tokens), "qas": qas}


def _qa(*spans):
    return {"question": "Who died?", "answers": [list(s) for s in spans],
            "slots": {"wh": "who", "aux": "_", "subj": "_", "verb": "died", "obj": "_", "prep": "_", "obj2": "_"},
            "is_passive": False, "is_negated": False}


@pytest.mark.parametrize("pred,message", [
    (_rec([_qa((0, 7))]), r"\[0, 7\) is not a span of a 6-token sentence"),   # one past the end: was a TP
    (_rec([_qa((3, 2))]), r"\[3, 2\) is not a span"),                          # end before start: was an FP
    (_rec([_qa((-1, 2))]), r"\[-1, 2\) is not a span"),
    ({"sentence_id": "s1", "predicate_index": 2, "tokens": ["A"]}, "has no 'qas'"),
    (_rec("Who died? A man"), "'qas' is a str, not a list"),
    (_rec([_qa((1,))]), r"is not a \[start, end\) pair of integers"),
])
def test_invalid_predictions_are_refused_naming_the_record(pred, message):
    from metrics.qasrl import InvalidRecordError

    gold = [_rec([_qa((0, 2))])]
    with pytest.raises(InvalidRecordError, match=message) as err:
        evaluate_records(gold, [pred])
    assert err.value.side == "predicted" and err.value.position == 0 and "sentence_id='s1'" in str(err.value)


def test_prediction_bounds_come_from_the_gold_sentence_when_it_has_no_tokens():
    from metrics.qasrl import InvalidRecordError

    gold = [_rec([_qa((0, 2))])]
    pred = {"sentence_id": "s1", "predicate_index": 2, "qas": [_qa((0, 7))]}
    with pytest.raises(InvalidRecordError, match="6-token sentence"):
        evaluate_records(gold, [pred])


def test_cli_names_the_file_and_line_of_an_invalid_prediction(tmp_path, capsys):
    from evaluation.qasrl import main

    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold.write_text(json.dumps(_rec([_qa((0, 2))])) + "\n")
    pred.write_text("\n" + json.dumps(_rec([_qa((3, 2))])) + "\n")  # a blank first line: the record is on line 2
    with pytest.raises(SystemExit) as exit_:
        main([str(gold), str(pred)])
    assert exit_.value.code == 2
    assert f"{pred}:2: predicted record #0" in capsys.readouterr().err
