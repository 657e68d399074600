"""Copular facts (models/consistency/copula.py): which forms of "be" are copulas, their subject and attributes,
the defined behaviour of the hard cases, the pipeline's copular predicates, and the rule on the
real benchmark's dev copula QAs (evaluation.copula)."""
import pytest

from models.consistency.copula import Lexicon, copular_records

LEX = Lexicon({"arrested", "running", "known", "typed", "played", "acted", "found"},
              {"runs", "expresses", "acted", "has", "lives", "says", "played"})


def qas(sentence, verbs=frozenset()):
    recs, counts = copular_records(sentence.split(), LEX, verbs=set(verbs))
    return [(qa["question"], qa["answer_texts"][0], qa["is_negated"]) for r in recs for qa in r["qas"]], counts


def test_a_copula_gives_one_qa_per_coordinated_attribute():
    got, counts = qas("Andrew Shue is an American actor , entrepreneur , and activist best known for his role .")
    assert got == [("Who is an American actor?", "Andrew Shue", False), ("Who is an entrepreneur?", "Andrew Shue", False),
                   ("Who is an activist?", "Andrew Shue", False)]
    assert counts["copulas"] == 1
    got, _ = qas("He was the son of Quintus and the brother of Lucius .")
    assert [q for q, _, _ in got] == ["Who was the son of Quintus?", "Who was the brother of Lucius?"]


def test_auxiliaries_of_passive_and_progressive_verbs_are_not_copulas():
    assert qas("He was arrested in May .") == ([], {"auxiliary": 1})
    assert qas("She is running for office .")[0] == []
    assert qas("Python is also dynamically typed .")[0] == []
    # the detector's verbal predicate right after "be" makes it an auxiliary too
    assert qas("The body was discovered later .", verbs={3})[0] == []


def test_hard_cases_have_a_defined_behaviour_and_are_counted():
    assert qas("There is a problem with the plan .") == ([], {"existential_there": 1})
    assert qas("It was in 1990 that he left .") == ([], {"cleft_it_that": 1})
    assert qas("Is he a member of the club ?") == ([], {"question": 1})
    assert qas("He is to blame .") == ([], {"infinitival": 1})
    got, counts = qas("Shue is not a member of the band .")
    assert got == [("Who is not a member of the band?", "Shue", True)] and counts["negated"] == 1
    got, _ = qas("Smoking should not be legal in public places .")
    assert got == [("What should not be legal in public places?", "Smoking", True)]


def test_the_subject_of_the_clause_is_the_answer():
    assert qas("Born in Tehran in 1940 , she is the only daughter of the dynasty .")[0][0][1] == "she"
    assert qas("Wenham has also acted in a number of productions , and is an accomplished voice actor .")[0][0][:2] == \
        ("Who is an accomplished voice actor?", "Wenham")
    assert qas("She currently lives in Zurich and is an active philanthropist .")[0][0][1] == "She"
    assert qas("Laura Muir says she is happy .")[0][0][1] == "she"
    got, _ = qas("Mike is an outspoken conservative , and often expresses his opinions .")
    assert got == [("Who is an outspoken conservative?", "Mike", False)]  # the new clause is no attribute
    assert qas("His show has been a staple of the radio for years .")[0][0][0] == \
        "What has been a staple of the radio for years?"


def test_the_pipeline_adds_copular_predicates_and_the_switch_leaves_them_out():
    from models.consistency import ConsistencyPipeline
    from models.entailment import LexicalScorer

    class Detector:
        class verb_forms:  # the detector's inflected form -> lemma table
            verbal = {"arrested": "arrest", "joined": "join"}

        def detect(self, sentences):
            return [[{"predicate_index": i, "predicate": w, "predicate_type": "verbal", "verb_form": w[:-2],
                      "score": 1.0} for i, w in enumerate(s) if w in ("joined", "arrested")] for s in sentences]

    class Parser:
        input_limit = 512

        def input_lengths(self, records):
            return [len(r["tokens"]) for r in records]

        def predict(self, records):
            return [dict(r, qas=[]) for r in records], {}

    pair = {"reference": "Merkel is a physicist . She joined the CDU .",
            "generated": "Merkel is a chemist . There is a party . She was arrested ."}
    on = ConsistencyPipeline(LexicalScorer(), Parser(), Detector()).run([pair])[0]
    preds = [p for s in on["sentences"] for p in s["predicates"]]
    cop = [p for p in preds if p["predicate_type"] == "copular"]
    assert [(p["predicate"], p["qas"][0]["question"], p["qas"][0]["answer"]) for p in cop] == \
        [("is", "Who is a chemist?", "Merkel")]
    assert cop[0]["qas"][0]["copular"] and on["n_qas"] == 1
    assert any("copulas: 1 with QAs" in m and "existential_there" in m and "auxiliary" in m for m in on["messages"])
    off = ConsistencyPipeline(LexicalScorer(), Parser(), Detector(), copulas=False).run([pair])[0]
    assert not [p for s in off["sentences"] for p in s["predicates"] if p["predicate_type"] == "copular"]


def test_the_rule_on_the_benchmark_dev_copulas(data_dir, tmp_path):
    """Built on dev: the figures docs/experiments/scoring.md reports (test is read once, by the command there)."""
    from parser_helpers import compose_cfg

    from evaluation.copula import run

    m = run(compose_cfg("eval_copula", [f"paths.data_dir={data_dir}", "split=dev"]), tmp_path)
    assert m["predicates"]["gold"] == 44 and m["recovery"]["gold_qas"] == 85
    assert m["predicates"]["precision"] > 0.9 and m["predicates"]["recall"] > 0.9
    assert m["recovery"]["recall"] > 0.7 and m["ua"]["f1"] > 0.45
    assert (tmp_path / "predictions.jsonl").exists()


def test_copular_records_read_like_parser_records_for_the_aligner():
    """The contradiction aligner's reader (qa_alignment.qas_of_records) takes a copular record as
    it takes a parser's: one QA per answer, a role from the slots, the copular type kept."""
    from models.qa_alignment import qas_of_records

    recs, _ = copular_records("Merkel is a physicist and a politician .".split(), LEX)
    flat = qas_of_records(recs)
    assert [(q["question"], q["answer"], q["role"], q["predicate_type"], q["verb_form"]) for q in flat] == [
        ("Who is a physicist?", "Merkel", "R0", "copular", "be"), ("Who is a politician?", "Merkel", "R0", "copular", "be")]
