"""The synthetic self-contradiction set (data_prep.synthetic_contradiction) from tiny hand-made
training records, and train.contradiction with it enabled (scripted models, no weights)."""
import json

import pytest

from data_prep.chatprotect import read_pairs
from data_prep.records import document_id, write_jsonl
from data_prep.synthetic_contradiction import KINDS, build, content, main, shorten
from parser_helpers import compose_cfg

EMPTY = {k: "_" for k in ("wh", "aux", "subj", "verb", "obj", "prep", "obj2")}


def _qa(wh, span, tokens, **slots):
    return {"question": f"{wh} ...?", "slots": {**EMPTY, "wh": wh, **slots}, "is_passive": False, "is_negated": False,
            "answers": [list(span)], "answer_texts": [" ".join(tokens[span[0]:span[1]])]}


def _record(sid, text, pidx, qas, ptype="verbal", split="train"):
    tokens = text.split()
    return {"sentence_id": sid, "tokens": tokens, "predicate_index": pidx, "predicate": tokens[pidx],
            "predicate_type": ptype, "verb_form": tokens[pidx], "qas": [_qa(*q, tokens) if len(q) == 2 else
                                                                      _qa(q[0], q[1], tokens, **q[2]) for q in qas],
            "source": "qanom", "split": split}


# who sold (R0), what (R1), when, where: four documents, so every role has answers from other documents
SENTENCES = [
    ("Wiki1k:wikinews:1:0:0", "The Bailey family sold the old home in 1959 in Tallahassee ."),
    ("Wiki1k:wikinews:2:0:0", "The city council sold the harbour land in 1971 in Boston ."),
    ("Wiki1k:wikinews:3:0:0", "A local bank sold its main office in 1988 in Denver ."),
    ("Wiki1k:wikinews:4:0:0", "Her brother sold two paintings in 2004 in Paris ."),
]


def _records():
    recs = []
    for sid, text in SENTENCES:
        toks = text.split()
        p = toks.index("sold")
        recs.append(_record(sid, text, p, [("who", (0, p)), ("what", (p + 1, toks.index("in")), {"aux": "did", "subj": "someone"}),
                                           ("when", (toks.index("in"), toks.index("in") + 2), {"aux": "did", "subj": "someone"}),
                                           ("where", (len(toks) - 3, len(toks) - 1), {"aux": "did", "subj": "someone"})]))
    # a nominal predicate inside its own "when" answer: never dropped nor replaced
    recs.append(_record("Wiki1k:wikinews:5:0:0", "Critics praised the opening night performance .", 5,
                        [("when", (3, 6), {"aux": "did", "subj": "someone"})], ptype="nominal"))
    return recs


def _write(tmp_path, recs, name="qanom.train.jsonl"):
    write_jsonl(tmp_path / name, recs)
    return tmp_path / name


def _run(tmp_path, *extra):
    path = _write(tmp_path, _records())
    stats = main(["--processed-dir", str(tmp_path), "--inputs", str(path), *extra])
    out = tmp_path / "contradiction-synthetic.jsonl"
    return stats, [json.loads(line) for line in out.read_text().splitlines()], out


def _source(row):
    sid, p, qi, kind = row["id"].removeprefix("synthetic:").rsplit(":", 3)
    rec = next(r for r in _records() if r["sentence_id"] == sid and r["predicate_index"] == int(p))
    return rec, rec["qas"][int(qi)], kind


def test_labels_kinds_and_balance(tmp_path):
    stats, rows, _ = _run(tmp_path)
    assert rows and stats["rows"] == len(rows)
    assert {r["kind"] for r in rows} <= set(KINDS)
    assert all(r["label"] == (r["kind"] == "answer_replaced") for r in rows)
    assert [r["label"] for r in rows] == [1, 0] * (len(rows) // 2)  # every prefix balanced (the trainer reads one)
    assert all(r["generator"] == "synthetic" and r["prefix"] == "" and r["orig"] != r["alt"] for r in rows)
    assert all(r["prompt"] == document_id(_source(r)[0]["sentence_id"]) for r in rows)
    # the same seed gives the same file, another seed may not
    again = main(["--processed-dir", str(tmp_path), "--inputs", str(tmp_path / "qanom.train.jsonl"),
                  "--out", str(tmp_path / "again.jsonl")])
    assert again["rows"] == stats["rows"]
    assert (tmp_path / "again.jsonl").read_text() == (tmp_path / "contradiction-synthetic.jsonl").read_text()


def test_a_replaced_answer_changes_only_its_span_and_comes_from_another_document(tmp_path):
    _, rows, _ = _run(tmp_path)
    replaced = [r for r in rows if r["label"] == 1]
    assert len(replaced) == 4
    answers = {document_id(sid): text.split() for sid, text in SENTENCES}
    for r in replaced:
        rec, qa, _ = _source(r)
        s, e = qa["answers"][0]
        orig, alt = r["orig"].split(), r["alt"].split()
        assert orig == rec["tokens"]
        tail = len(orig) - e
        assert alt[:s] == orig[:s] and alt[len(alt) - tail:] == orig[e:]
        new = alt[s:len(alt) - tail]
        assert new and not content(new) & content(orig[s:e])  # no content word shared with the original answer
        # the new answer is a span of a sentence of another document (case aside)
        others = [" ".join(t).lower() for d, t in answers.items() if d != r["prompt"]]
        assert any(" ".join(new).lower() in o for o in others)


def test_a_dropped_span_never_holds_the_predicate(tmp_path):
    stats, rows, _ = _run(tmp_path)
    short = [r for r in rows if r["label"] == 0]
    assert {r["kind"] for r in short} <= {"argument_dropped", "argument_added"} and len(short) == 4
    for r in short:
        rec, qa, kind = _source(r)
        full, cut = (r["orig"], r["alt"]) if kind == "argument_dropped" else (r["alt"], r["orig"])
        assert full == " ".join(rec["tokens"]) and len(cut.split()) < len(full.split())
        s, e = qa["answers"][0]
        assert not s <= rec["predicate_index"] < e
        assert rec["predicate"] in cut.split() and " ".join(rec["tokens"][s:e]) not in cut
    assert stats["skipped"]["span_covers_predicate"] == 1
    assert not any("wikinews:5" in r["id"] for r in rows)  # its only argument covers the predicate


def test_shorten_takes_the_dangling_preposition_and_comma():
    toks = "In 1959 , the family sold the home to the museum .".split()
    assert shorten(toks, (0, 2), 5) == "The family sold the home to the museum .".split()
    assert shorten(toks, (9, 11), 5) == "In 1959 , the family sold the home .".split()  # "to" goes with "the museum"
    assert shorten("They left , in 1959 .".split(), (3, 5), 1) == "They left .".split()


def test_evaluation_records_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not a training file"):
        main(["--processed-dir", str(tmp_path), "--inputs", str(_write(tmp_path, _records(), "qanom.test.jsonl"))])
    # a record of another split inside a training file is skipped and counted, never used
    recs = _records() + [_record("Wiki1k:wikinews:9:0:0", "The museum sold a statue in 1999 in Rome .", 2,
                                 [("who", (0, 2)), ("when", (5, 7), {"aux": "did", "subj": "someone"})], split="dev")]
    path = _write(tmp_path, recs)
    stats = main(["--processed-dir", str(tmp_path), "--inputs", str(path)])
    text = (tmp_path / "contradiction-synthetic.jsonl").read_text()
    assert stats["skipped"]["not_a_training_split"] == 1
    assert "wikinews:9" not in text and "1999" not in text and "Rome" not in text and "statue" not in text


def test_the_output_reads_as_chatprotect_pairs(tmp_path):
    _, rows, out = _run(tmp_path, "--max-pairs", "4")
    pairs = read_pairs(out)
    assert len(pairs) == len(rows) == 4 and sum(p["label"] for p in pairs) == 2
    assert [(p["id"], p["group"], p["a"], p["b"], p["label"]) for p in pairs] == \
        [(r["id"], r["prompt"], r["orig"], r["alt"], r["label"]) for r in rows]


def test_build_is_deterministic_for_a_seed():
    assert build(_records(), seed=5) == build(_records(), seed=5)


def test_train_with_the_synthetic_set_chooses_by_validation_cv(tmp_path, monkeypatch):
    import models.contradiction as mc
    import models.contradiction.model as mcm
    import train.contradiction.run as tc
    from test_contradiction import MODELS, _pairs_file

    for module in (mc, mcm, tc):
        monkeypatch.setattr(module, "load_components", lambda *a, **k: MODELS)
    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    syn = tmp_path / "syn.jsonl"
    rows = []
    for i, (who, what) in enumerate([("Anna", "FDP"), ("Bernd", "SPD"), ("Carla", "CDU")]):
        rows += [{"id": f"s{i}a", "prompt": f"d{i}", "orig": f"{who} joined the {what} in 1990 .",
                  "alt": f"{who} joined the {what} in 1975 .", "label": 1, "kind": "answer_replaced"},
                 {"id": f"s{i}b", "prompt": f"d{i}", "orig": f"{who} joined the {what} in 1990 .",
                  "alt": f"{who} joined the {what} .", "label": 0, "kind": "argument_dropped"}]
    syn.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["parser=P", "detector=D", "entailment=E", f"data.train_file={pairs}", "cv.folds=2", "cv.C=[1.0]",
            "selection.files=[]", "analysis_cache=null",
            "cv.feature_sets=[numbers]"]
    m = tc.train(compose_cfg("train_contradiction", [*base, "synthetic.enabled=true", f"synthetic.file={syn}",
                                                     "synthetic.limit=4", "synthetic.weight=[0.5,2.0]"]), tmp_path / "R")
    assert [(g["synthetic"], g["synthetic_weight"]) for g in m["grid"]] == [(False, None), (True, 0.5), (True, 2.0)]
    best = max(m["grid"], key=lambda g: g["cv"]["f1"])  # the cell; its threshold then comes from cv.threshold_rule
    keys = ("feature_set", "C", "synthetic", "synthetic_weight")
    assert [m["chosen"][k] for k in keys] == [best[k] for k in keys] and m["chosen"]["pooled_threshold"] == best["threshold"]
    assert m["synthetic"]["pairs"] == 4 and m["synthetic"]["kinds"] == {"answer_replaced": 2, "argument_dropped": 2}
    assert m["synthetic_only"] and 0 <= m["synthetic_only"][0]["auc"] <= 1
    info = json.loads((tmp_path / "R" / "contradiction" / "contradiction.json").read_text())["info"]
    assert info["synthetic"]["used"] == m["chosen"]["synthetic"] and info["synthetic"]["pairs"] == 4
    # disabled (the default): the grid is as before, no synthetic cell, no synthetic file read
    off = tc.train(compose_cfg("train_contradiction", [*base, "synthetic.file=/nonexistent"]), tmp_path / "R2")
    assert [g["synthetic"] for g in off["grid"]] == [False] and "synthetic" not in off
    assert off["grid"][0]["cv"] == m["grid"][0]["cv"]
    with pytest.raises(FileNotFoundError, match="data_prep.synthetic_contradiction"):
        tc.train(compose_cfg("train_contradiction", [*base, "synthetic.enabled=true", "synthetic.file=/nonexistent"]),
                 tmp_path / "R3")
