"""The consistency pipeline: tokenization, the report (localized unsupported QAs, score, statuses
and messages for bad input), given predicates / given QAs, the CLI end to end with a tiny parser,
the benchmark's response loading and recovery, and DecompScore."""
import json

import pytest

from evaluation.consistency_benchmark import load_responses, recovery, response_sentences
from evaluation.decomp_score import decomp_metrics, sentence_pairs
from models.consistency import ConsistencyPipeline
from models.entailment import LexicalScorer, StackedScorer, save_format
from models.parser import decode_texts
from models.parser.qa_format import get_format
from models.text import as_sentences, as_tokens, script_warnings, tokenize_sentences


class ScriptedParser:
    """The parser's interface with fixed outputs per predicate word: the real format decodes them."""

    def __init__(self, outputs: dict, max_source_length: int = 256):
        self.fmt, self.outputs, self.max_source_length = get_format("qasem_parser"), outputs, max_source_length
        self.calls = []

    @property
    def input_limit(self):
        return self.max_source_length

    def input_lengths(self, records):
        return [len(s.split()) for s in self.sources(records)]

    def sources(self, records):
        return [self.fmt.encode_source(r["tokens"], r["predicate_index"], r.get("predicate_type"), r.get("verb_form"))
                for r in records]

    def generate_texts(self, records):
        self.calls.append(len(records))
        return [self.outputs.get(r["tokens"][r["predicate_index"]], "") for r in records]

    def predict(self, records):
        return decode_texts(self.fmt, records, self.generate_texts(records))


class WordDetector:
    """The detector's interface: the listed words are predicates."""

    def __init__(self, verbs):
        self.verbs = verbs

    def detect(self, sentences):
        return [[{"predicate_index": i, "predicate": w, "predicate_type": "verbal", "verb_form": w.rstrip("ed"),
                  "score": 1.0} for i, w in enumerate(s) if w in self.verbs] for s in sentences]


SEP = "<extra_id_2>"
REFERENCE = "Police arrested a man in Dublin on Monday . He was released later ."
GENERATED = "Police arrested a man in Cork . The man smiled ."


def pipeline(scorer=None, **kw):
    parser = ScriptedParser({"arrested": f"who arrested someone?police{SEP}where did someone arrest someone?in cork",
                             "smiled": "this is not a qa"})
    return ConsistencyPipeline(scorer or LexicalScorer(), parser, WordDetector({"arrested", "smiled"}), **kw), parser


def context_scorer():
    """A stacked scorer whose score reads the other QAs of the same predicate (ctx_lex_content)."""
    return StackedScorer(["lex_content", "ctx_lex_content"], coef=[1.0, 2.0], intercept=-1.0)


def test_tokenize_keeps_abbreviations_and_splits_clitics():
    sents = tokenize_sentences('Dr. Smith met the U.S. envoy on Jan. 5. He didn\'t say "no".\n\nA new line.')
    assert sents == [["Dr.", "Smith", "met", "the", "U.S.", "envoy", "on", "Jan.", "5", "."],
                     ["He", "did", "n't", "say", '"', "no", '"', "."], ["A", "new", "line", "."]]
    assert tokenize_sentences("   ") == [] and as_sentences(["a", "b"]) == [["a", "b"]]
    assert "not Latin" in script_warnings(["Москва", "красивая"])[0]
    assert "without spaces" in script_warnings(["这是一个没有空格的很长很长的句子" * 3])[1]
    assert "without spaces" in script_warnings(["abcdefghij" * 5])[0]
    assert script_warnings(["Plain", "English"]) == []


def test_report_localizes_the_unsupported_answer_and_scores_the_pair():
    pipe, parser = pipeline()
    (rep,) = pipe.run([{"id": "p", "reference": REFERENCE, "generated": GENERATED}])
    assert parser.calls == [2]  # both predicates of both sentences in one parser batch
    s0, s1 = rep["sentences"]
    (pred,) = s0["predicates"]
    assert pred["predicate"] == "arrested" and pred["predicate_index"] == 1
    assert [(q["answer"], q["answer_span"], q["supported"]) for q in pred["qas"]] == [
        ("Police", [0, 1], True), ("in Cork", [4, 6], False)]
    assert rep["unsupported"] == [{"sentence": 0, "predicate_index": 1, "predicate": "arrested",
                                   "question": "Where did someone arrest someone?", "answer": "in Cork",
                                   "answer_span": [4, 6], "score": 0.25}]
    assert (rep["n_qas"], rep["n_supported"], rep["share"], rep["status"]) == (2, 1, 0.5, "ok")
    assert rep["score"] == pytest.approx(0.7 * 0.5 + 0.3 * 0.25)  # share_min: the share mixed with the lowest P
    # the second sentence's parser output does not decode: said, not dropped
    assert s1["predicates"][0]["status"] in ("undecodable", "no_qas")
    assert any("smiled" in m for m in rep["messages"])
    json.dumps(rep)  # the report is plain JSON


@pytest.mark.parametrize("scorer", [LexicalScorer, context_scorer])
def test_batched_and_one_at_a_time_give_the_same_report(scorer):
    pipe, parser = pipeline(scorer())
    pairs = [{"reference": REFERENCE, "generated": GENERATED}, {"reference": "x", "generated": "Nobody arrested anyone ."}]
    assert pipe.run(pairs, batched=True) == pipe.run(pairs, batched=False)


def test_the_stacked_scorer_sees_the_other_qas_of_each_predicate():
    """"where ... in cork" is not in the reference: it lowers its sibling "who arrested someone? police"."""
    pipe, _ = pipeline(context_scorer())
    qas = pipe.run([{"reference": REFERENCE, "generated": GENERATED}])[0]["sentences"][0]["predicates"][0]["qas"]
    alone = context_scorer().score(as_tokens(REFERENCE), [f"{qas[0]['question']} {qas[0]['answer']}"],
                                   answers=[qas[0]["answer"]])[0]
    assert qas[0]["score"] < round(alone, 6)


@pytest.mark.parametrize("pair,status,note", [
    ({"reference": REFERENCE, "generated": ""}, "empty_generated", "generated text is empty"),
    ({"reference": "", "generated": GENERATED}, "empty_reference", "reference is empty"),
    ({"reference": REFERENCE, "generated": "Blue skies ."}, "no_predicates", "sentence 0: no predicate found"),
    ({"reference": REFERENCE, "generated": "这是一个没有空格的很长很长的句子这是一个没有空格的很长很长的句子"}, "no_predicates",
     "not Latin"),
])
def test_bad_input_gives_a_report_that_says_what_happened(pair, status, note):
    pipe, _ = pipeline()
    (rep,) = pipe.run([pair])
    assert rep["status"] == status and rep["score"] is None
    assert any(note in m for m in rep["messages"]), rep["messages"]


def test_long_sentence_is_parsed_and_flagged():
    pipe, _ = pipeline()
    pipe.parser.max_source_length = 5
    (rep,) = pipe.run([{"reference": REFERENCE, "generated": GENERATED}])
    assert rep["n_qas"] == 2 and any("exceed its window of 5" in m for m in rep["messages"])


def test_given_predicates_and_given_qas_skip_those_stages():
    pipe, parser = pipeline()
    pipe.detector = None
    toks = GENERATED.split()[:7]
    (rep,) = pipe.run([{"reference": REFERENCE, "generated": [toks],
                        "predicates": [[{"predicate_index": 1, "verb_form": "arrest"}]]}])
    assert rep["n_qas"] == 2 and parser.calls == [1]
    pipe.parser = None  # the benchmark's own QAs: no detector, no parser
    (rep,) = pipe.run([{"reference": REFERENCE, "generated": [toks],
                        "qas": [{"sentence": 0, "predicate_index": 1, "question": "who arrested someone?",
                                 "answer_span": [2, 4]}]}])
    assert [(q["answer"], q["supported"]) for q in rep["sentences"][0]["predicates"][0]["qas"]] == [("a man", True)]
    with pytest.raises(ValueError, match="no predicate detector"):
        pipe.run([{"reference": REFERENCE, "generated": GENERATED}])


TOKS = GENERATED.split()[:7]  # "Police arrested a man in Cork ."


def _qa(**kw):
    return {"sentence": 0, "predicate_index": 1, "question": "who arrested someone?", "answer_span": [2, 4], **kw}


@pytest.mark.parametrize("pair,problem", [
    ({"reference": REFERENCE, "generated": 12345}, "'generated' must be a string"),
    ({"reference": None, "generated": GENERATED}, "'reference' must be a string"),
    ({"reference": REFERENCE, "generated": [TOKS], "qas": [_qa(predicate_index=99)]},
     "qas[0]: predicate_index 99 is outside the sentence (tokens 0..6)"),
    ({"reference": REFERENCE, "generated": [TOKS], "qas": [_qa(predicate_index=-1)]},
     "predicate_index -1 is outside the sentence"),
    ({"reference": REFERENCE, "generated": [TOKS], "qas": [_qa(answer_span=[6, 3])]},
     "answer_span [6, 3] is not a span of sentence 0 (7 tokens)"),
    ({"reference": REFERENCE, "generated": [TOKS], "qas": [_qa(answer_span=[5, 9])]}, "answer_span [5, 9] is not a span"),
    ({"reference": REFERENCE, "generated": [TOKS], "qas": [_qa(sentence=3)]}, "sentence 3 does not exist"),
    ({"reference": REFERENCE, "generated": [TOKS], "qas": "who?"}, "'qas' must be a list"),
    ({"reference": REFERENCE, "generated": [TOKS], "predicates": [[{"predicate_index": 7}]]},
     "predicates[0][0]: predicate_index 7 is outside the sentence"),
    ({"reference": REFERENCE, "generated": [TOKS], "predicates": [[{"predicate_index": "1"}]]}, "is not an integer"),
])
def test_an_invalid_pair_gets_invalid_input_and_the_others_are_scored(pair, problem):
    pipe, _ = pipeline()
    good = {"reference": REFERENCE, "generated": [TOKS], "qas": [_qa()]}
    first, bad, last = pipe.run([good, {**pair, "id": "bad"}, good])
    assert bad["status"] == "invalid_input" and bad["score"] is None and bad["id"] == "bad"
    assert any(problem in m for m in bad["messages"]), bad["messages"]
    assert first["status"] == last["status"] == "ok" and first["score"] == last["score"] == 1.0


def test_the_cli_refuses_bad_pairs_by_file_and_line_before_any_model_loads(tmp_path, monkeypatch):
    import models.consistency
    from evaluation.consistency import InputError, run
    from parser_helpers import compose_cfg

    def no_model(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(models.consistency.ConsistencyPipeline, "from_pretrained", no_model)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(p) for p in [
        {"reference": REFERENCE, "generated": [TOKS], "qas": [_qa()]},
        {"reference": REFERENCE, "generated": 12345},
        {"reference": REFERENCE, "generated": [TOKS], "qas": [_qa(predicate_index=99, answer_span=[6, 3])]}]) + "\n")
    cfg = compose_cfg("eval_consistency", ["parser=P", "entailment=E", f"pairs={pairs}"])
    with pytest.raises(InputError) as err:
        run(cfg, tmp_path / "out")
    msg = str(err.value)
    assert "3 problem(s)" in msg and f"{pairs}:2: 'generated' must be" in msg
    assert f"{pairs}:3: qas[0]: predicate_index 99" in msg and f"{pairs}:3: qas[0]: answer_span [6, 3]" in msg
    assert not (tmp_path / "out").exists()


def test_a_long_reference_is_chunked_by_the_scorer_and_reported():
    from models.entailment import EmbeddingScorer

    words = ("The council met for hours and argued about budgets . " * 40).split()
    pipe = ConsistencyPipeline(EmbeddingScorer(chunk_words=40, chunk_overlap=10), ScriptedParser(
        {"arrested": "who arrested someone?police"}), WordDetector({"arrested"}))
    (rep,) = pipe.run([{"reference": words + REFERENCE.split(), "generated": GENERATED}])
    assert rep["reference_words"] == len(words) + len(REFERENCE.split())
    assert rep["reference_chunks"] > 1 and any("windows" in m for m in rep["messages"])


def test_cli_with_a_tiny_parser_writes_reports_page_and_summary(tmp_path):
    from parser_helpers import compose_cfg
    from train.parser import train

    train(compose_cfg("train_parser", ["+experiment=tiny", f"run_dir={tmp_path / 'parser'}"]))
    clf = tmp_path / "clf"
    save_format(clf, {"family": "stacked", "features": ["lex_raw"], "coef": [4.0], "intercept": -2.0,
                      "mean": [0.0], "std": [1.0]})
    pairs = tmp_path / "pairs.jsonl"
    toks = GENERATED.split()[:7]
    pairs.write_text(json.dumps({"id": "a", "reference": REFERENCE, "generated": [toks],
                                 "predicates": [[{"predicate_index": 1, "verb_form": "arrest"}]]}) + "\n" +
                     json.dumps({"id": "b", "reference": REFERENCE, "generated": "", "predicates": []}) + "\n")
    from evaluation.consistency import run

    cfg = compose_cfg("eval_consistency", [f"parser={tmp_path / 'parser' / 'best'}", f"entailment={clf}",
                                           f"pairs={pairs}"])
    summary = run(cfg, tmp_path / "out")
    reports = [json.loads(l) for l in (tmp_path / "out" / "reports.jsonl").read_text().splitlines()]
    assert [r["id"] for r in reports] == ["a", "b"] and reports[1]["status"] == "empty_generated"
    assert summary["pairs"] == 2 and summary["status"]["empty_generated"] == 1
    assert reports[0]["sentences"][0]["predicates"][0]["predicate"] == "arrested"
    # summary.json and report.html are made from exactly the reports written to reports.jsonl
    from evaluation.consistency import summarize
    from evaluation.consistency_html import render_page

    assert isinstance(summary.pop("scorer_stats"), dict) and summary == summarize(reports)
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary
    # what the run did beside the reports stays out of summary.json (the same reports, the same bytes)
    assert set(json.loads((tmp_path / "out" / "run.json").read_text())) == {"scorer_stats", "seconds"}
    assert (tmp_path / "out" / "report.html").read_text(encoding="utf-8") == render_page(reports)
    # threshold 0.5: a QA is supported exactly when its score reaches it
    qas = [q for p in reports[0]["sentences"][0]["predicates"] for q in p["qas"]]
    assert all(q["supported"] == (q["score"] >= 0.5) for q in qas)

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "reference": "r"}\n')
    from evaluation.consistency import InputError

    with pytest.raises(InputError, match=r"bad.jsonl:1: expected an object"):
        run(compose_cfg("eval_consistency", [f"parser={tmp_path / 'parser' / 'best'}", f"entailment={clf}",
                                             f"pairs={bad}"]), tmp_path / "out2")


def test_benchmark_responses_map_every_qa_into_its_sentence(data_dir):
    responses, info = load_responses(data_dir / "qasem-consistency" / "test.jsonl", "test")
    assert (info["responses"], info["qas"]) == (151, 1556)
    for r in responses:
        for q in r["qas"]:
            sent = r["sentences"][q["sentence"]]
            assert 0 <= q["predicate_index"] < len(sent)
            assert sent[q["predicate_index"]] == q["predicate"] or q["predicate"] in " ".join(sent)
    assert response_sentences(["A", "b", ".", "C", "d", "!"]) == [["A", "b", "."], ["C", "d", "!"]]
    assert response_sentences([["A", "."], ["B", "."]]) == [["A", "."], ["B", "."]]


def test_recovery_counts_ua_matches_on_the_same_predicate():
    responses = [{"dataset": "cliff", "qas": [
        {"sentence": 0, "predicate_index": 1, "answer_span": [0, 1]},
        {"sentence": 0, "predicate_index": 1, "answer_span": [2, 6]},
        {"sentence": 0, "predicate_index": 7, "answer_span": [6, 7]}]}]
    reports = [{"sentences": [{"predicates": [{"predicate_index": 1, "qas": [
        {"answer_span": [0, 1]}, {"answer_span": [3, 5]}]}]}]}]  # [3,5] vs [2,6]: IOU 0.5 -> match
    rec = recovery(responses, reports)["cliff"]
    assert rec == {"qa_recall": 2 / 3, "qas": 3, "predicate_recall": 0.5, "predicates": 2}


def test_decomp_score_counts_supported_qas_per_sentence():
    recs = [{"sentence_id": "s1", "tokens": ["a", "b"], "predicate_index": i, "predicate": "b",
             "predicate_type": "verbal", "verb_form": "b", "qas": []} for i in (1, 0)]
    (pair,) = sentence_pairs(recs)
    assert pair["reference"] == ["a", "b"] and [p["predicate_index"] for p in pair["predicates"][0]] == [0, 1]
    recs[0]["qas"] = [{"question": "what b?", "answers": [[0, 1], [0, 2]]}]
    (gold,) = sentence_pairs(recs, gold_qas=True)
    assert [(q["predicate_index"], q["answer_span"]) for q in gold["qas"]] == [(1, [0, 1]), (1, [0, 2])]
    pipe = ConsistencyPipeline(LexicalScorer())  # the annotated QAs need neither detector nor parser
    (rep,) = pipe.run([gold])
    assert (rep["n_qas"], rep["n_supported"]) == (2, 2)
    m = decomp_metrics([{"n_qas": 4, "n_supported": 3}, {"n_qas": 0, "n_supported": 0}])
    assert m == {"sentences": 2, "qas": 4, "decomp_score": 1.5, "qas_per_sentence": 2.0,
                 "unsupported_share": 0.25, "sentences_without_qas": 1}


def test_the_response_score_is_a_choice_and_the_share_stays_beside_it():
    from models.consistency.response_score import response_scores

    pipe, _ = pipeline(response_score="min_p")
    (rep,) = pipe.run([{"id": "p", "reference": REFERENCE, "generated": GENERATED}])
    qas = [q["score"] for s in rep["sentences"] for p in s["predicates"] for q in p["qas"] if q["score"] is not None]
    assert rep["share"] == 0.5 and rep["score"] == min(qas) == 0.25
    every = response_scores(rep, 0.5, 0.7)
    assert every["share"] == rep["share"] and every["mean_p"] == sum(qas) / 2
    assert every["share_min"] == pytest.approx(0.7 * 0.5 + 0.3 * 0.25)
    (empty,) = pipe.run([{"id": "e", "reference": REFERENCE, "generated": "Blue skies ."}])
    assert empty["score"] is None and empty["share"] is None
    with pytest.raises(ValueError, match="response_score='median'"):
        pipeline(response_score="median")
