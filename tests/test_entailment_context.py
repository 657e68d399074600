"""The stacked classifier's context features: a QA's lexical signals averaged over the other QAs of
the same predicate occurrence, keyed by the caller (benchmark examples, the consistency pipeline)
or by the question's verb; batched and one-predicate-at-a-time scoring agree."""
import pytest

from models.entailment import StackedScorer, predicate_keys
from models.entailment.features import CONTEXT_FEATURES, add_context_features, question_verb_key

PREMISE = "The council approved the budget on Tuesday and met the mayor on Monday ."
FEATURES = ["lex_content", "ctx_lex_content", "ctx_lex_raw"]


def stacked():
    # weights on the QA's own coverage and on its siblings' coverage
    return StackedScorer(FEATURES, coef=[1.0, 2.0, 0.5], intercept=-1.0)


def test_context_is_the_mean_over_the_other_qas_of_the_predicate():
    rows = [{"lex_content": 1.0, "lex_raw": 1.0}, {"lex_content": 0.0, "lex_raw": 0.5},
            {"lex_content": 0.5, "lex_raw": 0.0}, {"lex_content": 0.25, "lex_raw": 0.25},
            {"lex_content": 0.75, "lex_raw": 0.75}]
    add_context_features(rows, ["a", "a", "a", "b", None])
    assert [r["ctx_lex_content"] for r in rows] == [0.25, 0.75, 0.5, 0.25, 0.75]
    assert rows[0]["ctx_lex_raw"] == 0.25 and rows[2]["ctx_lex_raw"] == 0.75
    assert set(CONTEXT_FEATURES) <= set(rows[0])


def test_the_question_verb_is_the_default_key():
    assert question_verb_key("who says something?") == question_verb_key("what does someone say?") == "say"
    assert question_verb_key("who approved something?") != question_verb_key("who met someone?")
    assert question_verb_key("is this a template at all") is None


def test_a_sibling_moves_the_score_only_through_its_predicate():
    s = stacked()
    qa = "who approved something? The council"
    alone = s.score(PREMISE, [qa])[0]
    bad = "when did someone approve something? on Friday"  # not in the premise: lowers its siblings
    same, other = s.score(PREMISE, [qa, bad], predicate_keys=[0, 0]), s.score(PREMISE, [qa, bad], predicate_keys=[0, 1])
    assert same[0] < alone and other[0] == pytest.approx(alone)
    # without keys, the questions' verbs group them: approve / approve
    assert s.score(PREMISE, [qa, bad]) == pytest.approx(same)
    with pytest.raises(ValueError, match="2 predicate keys for 1 hypotheses"):
        s.score(PREMISE, [qa], predicate_keys=[0, 1])


def test_benchmark_examples_are_keyed_by_sentence_and_predicate():
    ex = [{"premise_tokens": PREMISE.split(), "hypothesis": h, "answer": a, "response_id": "r",
           "sentence_index": si, "predicate_index": pi}
          for h, a, si, pi in [("who approved something? The council", "The council", 0, 2),
                               ("when did someone approve something? on Friday", "on Friday", 0, 2),
                               ("when did someone approve something? on Tuesday", "on Tuesday", 1, 2)]]
    assert predicate_keys(ex) == [(0, 2), (0, 2), (1, 2)]
    assert predicate_keys([{k: v for k, v in e.items() if k != "sentence_index"} for e in ex]) is None
    s = stacked()
    got = s.score_examples(ex)
    assert got == pytest.approx(s.score(PREMISE.split(), [e["hypothesis"] for e in ex], [e["answer"] for e in ex],
                                        predicate_keys=[(0, 2), (0, 2), (1, 2)]))
