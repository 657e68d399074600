"""External benchmarks (evaluation.external): the reader refuses bad files by line before any model loads, the
per-group metrics choose each threshold on the other groups, the word-overlap baseline, the document notes,
and the entry point end to end on a tiny release and on real SummEdits records."""
import json

import pytest

from data_prep.external import read_external
from data_prep.records import DataFormatError
from metrics.external import binary_table, score_table
from models.text import layout_notes

FIELDS = {"id": "id", "document": "doc", "summary": "summary", "target": "label", "group": "domain",
          "extra": ["edit_types"]}
DOC = "Police arrested a man in Dublin on Monday . He was released later ."


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _row(i, label=1, domain="news", summary="Police arrested a man in Dublin ."):
    return {"id": f"{domain}-{i}", "domain": domain, "doc": DOC, "summary": summary, "label": label,
            "edit_types": [] if label else ["entity_modification"], "original_summary": "Police arrested a man in Dublin ."}


def test_the_reader_names_every_bad_line_at_once(tmp_path):
    bad = _write(tmp_path / "b.jsonl", [_row(0), {"id": "x", "doc": DOC, "label": 1, "domain": "news"},
                                        _row(2, label=2), _row(3, label=True), _row(0), {**_row(5), "doc": " "}])
    with pytest.raises(DataFormatError) as err:
        read_external(bad, FIELDS, "binary")
    msg = str(err.value)
    assert "5 problem(s)" in msg and f"{bad}:2: missing field(s) ['summary']" in msg
    assert f"{bad}:3: label 2 is not 0 or 1" in msg and f"{bad}:4: label True is not 0 or 1" in msg
    assert f"{bad}:5: id 'news-0' repeats line 1" in msg and f"{bad}:6: doc empty" in msg
    scores = _write(tmp_path / "s.jsonl", [{**_row(0), "label": 0.25}, {**_row(1), "label": "high"}])
    with pytest.raises(DataFormatError, match=r"s.jsonl:2: score 'high' is not a finite number"):
        read_external(scores, FIELDS, "score")
    rows = read_external(_write(tmp_path / "g.jsonl", [_row(0), _row(1, 0)]), FIELDS, "binary")
    assert [(r["id"], r["target"], r["group"], r["extra"]) for r in rows] == [
        ("news-0", 1.0, "news", {"edit_types": []}), ("news-1", 0.0, "news", {"edit_types": ["entity_modification"]})]


def test_each_domain_is_scored_at_the_threshold_of_the_other_domains():
    # domain a separates at 0.5, domain b at 0.8: a's threshold comes from b and b's from a
    groups = ["a"] * 4 + ["b"] * 4
    gold = [1, 1, 0, 0, 1, 1, 0, 0]
    scores = [0.6, 0.7, 0.3, 0.4, 0.9, 0.95, 0.7, 0.75]
    t = binary_table(groups, gold, scores)
    assert 0.75 < t["domains"]["a"]["threshold"] <= 0.9 and t["domains"]["a"]["bacc"] == 0.5
    assert 0.4 < t["domains"]["b"]["threshold"] <= 0.6 and t["domains"]["b"]["bacc"] == 0.5
    assert t["domains"]["a"]["auc"] == t["domains"]["b"]["auc"] == 1.0 and t["mean_auc"] == 1.0
    assert t["mean_bacc"] == 0.5 and t["domains"]["a"]["n"] == 4
    s = score_table(groups, [0.1, 0.2, 0.3, 0.4] * 2, [1, 2, 3, 4, 4, 3, 2, 1])
    assert s["domains"]["a"]["pearson"] == pytest.approx(1.0) and s["domains"]["b"]["spearman"] == pytest.approx(-1.0)
    assert s["mean_pearson"] == pytest.approx(0.0)
    # nothing scored (every summary without a QA): no figure rather than NaN, which JSON cannot hold
    assert binary_table([], [], []) == {"domains": {}, "mean_bacc": None, "mean_auc": None}


def test_word_overlap_and_the_notes_on_a_documents_layout():
    from evaluation.external import word_overlap

    assert word_overlap(DOC, "Police arrested a man .") == 1.0
    assert word_overlap(DOC, "Police arrested a woman in Cork .") == pytest.approx(2 / 4)
    text = "Speaker 1: Hello there.\n\nSpeaker 2: Hi.\n- one item\n2) another\n" + "word " * 30
    notes = layout_notes(text, long_words=20)
    assert [n.split()[0] for n in notes] == ["1", "2", "2", str(len(text.split()))]
    assert layout_notes("One plain line.", long_words=20) == []


def test_the_entry_point_on_a_tiny_release_writes_the_metrics_shape(tmp_path, monkeypatch):
    from evaluation.external import InputError, run
    from parser_helpers import compose_cfg
    from self_contradiction_helpers import tiny_release

    data = tmp_path / "data"
    (data / "summedits").mkdir(parents=True)
    long_doc = "Speaker 1: " + DOC + "\n\nSpeaker 2: fine.\n" + "More words here . " * 400
    rows = [_row(0), _row(1, 0, summary="Police arrested a woman in Cork ."),
            {**_row(2, domain="podcast"), "doc": long_doc}, _row(3, 0, domain="podcast", summary="Nobody was there ."),
            _row(4, 1, domain="podcast", summary="Yes .")]
    _write(data / "summedits" / "evaluation.jsonl", rows)
    release = tiny_release(tmp_path / "release")
    cfg = compose_cfg("eval_external", [f"paths.data_dir={data}", f"release={release}", "progress=false"])
    metrics = run(cfg, tmp_path / "out")
    assert set(metrics["domains"]) == {"news", "podcast"} and metrics["records"] == 5
    for key in ("bacc", "auc", "threshold", "n"):
        assert key in metrics["domains"]["news"] and key in metrics["baseline_word_overlap"]["domains"]["news"]
    assert {"mean_bacc", "mean_auc"} <= set(metrics) and 0 <= metrics["mean_bacc"] <= 1
    assert set(metrics["response_scores"]) >= {"share", "mean_p", "min_p"}
    preds = [json.loads(x) for x in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in preds] == [r["id"] for r in rows] and "edit_types" in preds[0]
    reports = [json.loads(x) for x in (tmp_path / "out" / "reports.jsonl").read_text().splitlines()]
    notes = reports[2]["messages"]
    assert any("speaker turn" in m for m in notes) and any("blank line" in m for m in notes)
    assert any("words (over" in m for m in notes)
    # a summary with no predicate gets a status and no score, never 1
    unscored = [p for p in preds if p["share"] is None]
    assert all(p["status"] != "ok" for p in unscored)
    assert metrics["unscored"] == len(unscored)
    # the failure tables: the edited words of news-1 ("woman", "Cork") and whether a QA covers them
    analysis = metrics["analysis"]
    assert analysis["edit_types"]["entity_modification"]["n"] == 2
    assert set(analysis["document_words"]) == {"0-300", "300-1000", "1000+"}
    assert analysis["consistent_summaries"]["summaries"] == 3

    with pytest.raises(InputError, match="held-out split"):
        run(compose_cfg("eval_external", [f"paths.data_dir={data}", f"release={release}", "split=test"]),
            tmp_path / "x")


def test_a_bad_benchmark_file_is_refused_before_any_model_loads(tmp_path, monkeypatch):
    import models.consistency
    from evaluation.external import InputError, run
    from parser_helpers import compose_cfg

    def no_model(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(models.consistency.ConsistencyPipeline, "from_pretrained", no_model)
    data = tmp_path / "data"
    (data / "summedits").mkdir(parents=True)
    _write(data / "summedits" / "evaluation.jsonl", [_row(0), {**_row(1), "label": 3}])
    with pytest.raises(InputError, match=r"evaluation.jsonl:2: label 3 is not 0 or 1"):
        run(compose_cfg("eval_external", [f"paths.data_dir={data}", "entailment=E"]), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_summedits_development_split_reads_whole(data_dir):
    rows = read_external(data_dir / "summedits" / "evaluation.jsonl", FIELDS, "binary")
    assert len(rows) == 986 and sum(r["target"] for r in rows) == 369
    assert len({r["group"] for r in rows}) == 8


def test_the_changed_words_of_an_edit_are_found_against_the_original():
    from evaluation.external_analysis import changed_positions, qa_rows

    report = {"sentences": [{"index": 0, "tokens": "Police arrested a woman in Cork .".split(), "predicates": [
        {"predicate_index": 1, "qas": [{"score": 0.9, "answer_span": [0, 1]}, {"score": 0.8, "answer_span": [4, 6]}]}]}]}
    changed = changed_positions(report, "Police arrested a man in Dublin .")
    assert changed == {(0, 3), (0, 5)}
    # the predicate "arrested" holds no changed word; the answer "in Cork" does (and so, through its predicate, not
    # the first QA)
    assert qa_rows(report, changed) == [(0.9, False), (0.8, True)]
