"""Self-contradiction at the level of facts: QA alignment (models/qa_alignment.py), the pair
analysis and its statuses (models/contradiction/model.py), the ChatProtect reader, and train.contradiction
+ evaluation.contradiction end to end with scripted models (no weights)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from models.entailment import LexicalScorer
from models.qa_alignment import align, answer_relation, numbers_conflict, qas_of_records
from parser_helpers import compose_cfg

ROOT = Path(__file__).resolve().parents[1]
EMPTY = {k: "_" for k in ("wh", "aux", "subj", "verb", "obj", "prep", "obj2")}


def slots(wh, **kw):
    return {**EMPTY, "wh": wh, **kw}


class WordDetector:
    """The detector's interface: the listed words are predicates (verb form = the word minus -ed)."""

    def __init__(self, verbs):
        self.verbs = verbs

    def detect(self, sentences):
        return [[{"predicate_index": i, "predicate": w, "predicate_type": "verbal", "verb_form": w.lower().rstrip("d"),
                  "score": 1.0} for i, w in enumerate(s) if w in self.verbs] for s in sentences]


class RuleParser:
    """The parser's interface: per predicate, "who <verb> something?" = the words before it (R0),
    "when did someone <verb>?" = a year after "in" (when), "what did someone <verb>?" = the words
    after it up to "in" (R1)."""

    def predict(self, records):
        out = []
        for r in records:
            toks, i = r["tokens"], r["predicate_index"]
            qas = []
            if i > 0:
                qas.append(("who", dict(obj="something"), (0, i)))
            if "in" in toks[i + 1:]:
                k = toks.index("in", i + 1)
                if k + 1 < len(toks) and toks[k + 1].isdigit():
                    qas.append(("when", dict(aux="did", subj="someone"), (k, k + 2)))
                if k > i + 1:
                    qas.append(("what", dict(aux="did", subj="someone"), (i + 1, k)))
            out.append({**r, "qas": [{"question": f"{wh} ...?", "slots": slots(wh, verb=r["predicate"], **kw),
                                      "is_passive": False, "is_negated": False, "answers": [list(sp)],
                                      "answer_texts": [" ".join(toks[sp[0]:sp[1]])]} for wh, kw, sp in qas]})
        return out, {}


class BagOfWords:
    """The embedder's interface: word-count vectors over a fixed vocabulary."""
    VOCAB = "joined founded elected cdu spd fdp greens in the 1990 1985 1971 1975 2005 was".split()

    def embed(self, texts):
        return [[t.lower().split().count(w) for w in self.VOCAB] for t in texts]


MODELS = (WordDetector({"joined", "elected", "founded"}), RuleParser(), LexicalScorer(), BagOfWords())


def test_answer_relations_and_number_kinds():
    assert answer_relation("in 1960".split(), "in 1964".split())["numbers_differ"]
    assert answer_relation("over 800 papers".split(), "over 700 papers".split())["numbers_differ"]
    assert not answer_relation("in 2009 , 2013".split(), "four times".split())["numbers_differ"]  # years vs a count
    assert numbers_conflict({"3"}, {"4"}) and not numbers_conflict({"1990", "3"}, {"1990"})
    rel = answer_relation("by Armin Laschet".split(), "by Annegret Kramp-Karrenbauer".split())
    assert rel["relation"] == "overlap" or rel["names_differ"]
    assert answer_relation(["She"], ["Merkel"])["relation"] == "pronoun"
    assert answer_relation("the CDU".split(), "the CDU".split())["relation"] == "same"


def test_align_pairs_qas_on_the_same_predicate_and_role():
    a = "Merkel joined the CDU in 1990 .".split()
    b = "Merkel joined the CDU in 1989 .".split()
    recs = [RuleParser().predict([{"tokens": t, "predicate_index": 1, "predicate": "joined", "predicate_type": "verbal",
                                   "verb_form": "join"}])[0] for t in (a, b)]
    qa, qb = (qas_of_records(r) for r in recs)
    pairs = align(qa, qb, a, b)
    assert {(p["role"], p["relation"]) for p in pairs} == {("R0", "same"), ("R1", "same"), ("when", "disjoint")}
    assert [p["numbers_differ"] for p in pairs if p["role"] == "when"] == [True]


def test_every_pair_gets_a_row_and_bad_ones_a_status():
    from models.contradiction import analyse_pairs

    pairs = [{"id": "ok", "a": "Merkel joined the CDU in 1990 .", "b": "Merkel joined the CDU in 1989 ."},
             {"id": "empty", "a": "", "b": "Merkel joined the CDU ."},
             {"id": "nopred", "a": "Blue skies .", "b": "Merkel joined the CDU ."},
             {"id": "script", "a": "这是一个没有空格的很长很长的句子这是一个没有空格的很长很长的句子", "b": "Merkel joined the CDU ."}]
    rows = analyse_pairs(pairs, *MODELS)
    assert [(r["id"], r["status"]) for r in rows] == [("ok", "ok"), ("empty", "empty_sentence"),
                                                      ("nopred", "no_predicate"), ("script", "non_english")]
    ok = rows[0]
    assert ok["features"]["aligned_numbers_differ"] == 1.0 and ok["features"]["numbers_differ_same_event"] == 1.0
    f = ok["features"]  # bag-of-words cosine: 4 shared counted words, 1990 counted on one side only (1989 is not)
    assert f["sentence_similarity"] == pytest.approx(4 / 20 ** 0.5) == f["numbers_differ_similar"]
    (conflict,) = ok["conflicts"]
    assert conflict["role"] == "when" and conflict["a"]["span"] == [4, 6] and conflict["b"]["answer"] == "in 1989"


def test_reader_names_every_bad_line(tmp_path):
    from data_prep.chatprotect import read_pairs
    from data_prep.records import DataFormatError

    f = tmp_path / "pairs.jsonl"
    f.write_text('{"orig": "a", "alt": "b", "label": 0}\n{"orig": "a"\nnot json\n{"orig": "a", "alt": "b", "label": 2}\n')
    with pytest.raises(DataFormatError) as err:
        read_pairs(f)
    msg = str(err.value)
    assert "3 bad line(s)" in msg and f"{f}:2: not valid JSON" in msg and f"{f}:3: not valid JSON" in msg
    assert f"{f}:4: label must be 0 or 1" in msg


def _pairs_file(path: Path) -> Path:
    """Labelled pairs over four prompts: a year that differs on one event contradicts."""
    rows = []
    for g, (who, what) in enumerate([("Merkel", "CDU"), ("Kohl", "SPD"), ("Brandt", "FDP"), ("Schmidt", "Greens")]):
        rows += [
            {"id": f"{g}-c1", "prompt": who, "orig": f"{who} joined the {what} in 1990 .", "alt": f"{who} joined the {what} in 1985 .", "label": 1},
            {"id": f"{g}-c2", "prompt": who, "orig": f"{who} founded the {what} in 1971 .", "alt": f"{who} founded the {what} in 1975 .", "label": 1},
            {"id": f"{g}-n1", "prompt": who, "orig": f"{who} joined the {what} in 1990 .", "alt": f"{who} joined the {what} in 1990 .", "label": 0},
            {"id": f"{g}-n2", "prompt": who, "orig": f"{who} joined the {what} .", "alt": f"{who} was elected in 2005 .", "label": 0},
            {"id": f"{g}-n3", "prompt": who, "orig": f"{who} founded the {what} .", "alt": f"{who} founded the {what} in 1971 .", "label": 0},
        ]
    rows.append({"id": "nopred", "prompt": "x", "orig": "Blue skies .", "alt": "Merkel joined the CDU .", "label": 1})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def scripted(monkeypatch):
    import models.contradiction as mc
    import models.contradiction.model as mcm
    import train.contradiction.run as tc

    for module in (mc, mcm, tc):
        monkeypatch.setattr(module, "load_components", lambda *a, **k: MODELS)


def test_train_then_evaluate_end_to_end(tmp_path, scripted):
    from evaluation.contradiction import run
    from train.contradiction import train

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    ckpt = ["parser=P", "detector=D", "entailment=E"]
    metrics = train(compose_cfg("train_contradiction", [*ckpt, f"data.train_file={pairs}", "cv.folds=2",
                                                        "cv.C=[1.0]", "cv.feature_sets=[numbers]", "selection.files=[]",
                                                        "analysis_cache=null"]), tmp_path / "R")
    assert metrics["scored"] == 20 and metrics["statuses"] == {"ok": 20, "no_predicate": 1}
    assert (tmp_path / "R" / "contradiction" / "contradiction.json").exists()
    assert metrics["chosen"]["cv"]["recall"] > 0.5
    saved = json.loads((tmp_path / "R" / "contradiction" / "contradiction.json").read_text())
    assert saved["threshold"] == metrics["chosen"]["threshold"]  # the threshold cv.threshold_rule chose is the one shipped
    assert metrics["chosen"]["threshold_rule"]["rule"] in ("pooled", "weighted", "platt", "rate", "human")

    out = tmp_path / "D"
    summary = run(compose_cfg("eval_contradiction", [*ckpt, f"contradiction={tmp_path / 'R' / 'contradiction'}",
                                                     f"pairs={pairs}", "html=false"]), out)
    assert {"precision", "recall", "f1", "n", "positives", "threshold"} <= set(json.loads((out / "metrics.json").read_text()))
    assert summary["n"] == 21 and summary["positives"] == 9 and summary["baselines"]["chatgpt_published"]["f1"] == 0.837
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 21 and {"id", "p_contradiction", "decision", "conflicts"} <= set(preds[0])
    nopred = next(p for p in preds if p["id"] == "nopred")
    assert nopred["p_contradiction"] is None and nopred["status"] == "no_predicate"
    flagged = next(p for p in preds if p["id"] == "0-c1")
    assert flagged["decision"] and flagged["conflicts"][0]["b"]["answer"] == "in 1985"

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("Merkel joined the CDU in 1990. She was elected in 2005.")
    b.write_text("Merkel joined the CDU in 1985. It rained.")
    run(compose_cfg("eval_contradiction", [*ckpt, f"contradiction={tmp_path / 'R' / 'contradiction'}",
                                           f"a={a}", f"b={b}", "html=false"]), tmp_path / "D2")
    two = [json.loads(line) for line in (tmp_path / "D2" / "predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in two] == ["a0-b0"]  # only sentences that share a predicate are paired


def test_the_cli_stops_on_a_bad_line_before_any_model_loads(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"orig": "a", "alt": "b"}\n{"orig": 1, "alt": "b"}\n')
    out = subprocess.run([sys.executable, "-m", "evaluation.contradiction", "parser=/nonexistent", "detector=/nonexistent",
                          "entailment=/nonexistent", "contradiction=/nonexistent", f"pairs={bad}",
                          f"hydra.run.dir={tmp_path / 'D'}"], cwd=ROOT, capture_output=True, text=True)
    said = out.stdout + out.stderr
    assert out.returncode == 1 and f"{bad}:2: expected an object with string 'orig' and 'alt'" in said
    assert "Traceback" not in said


def test_best_threshold_equals_the_exhaustive_search():
    import numpy as np

    from metrics.contradiction import best_f1_threshold, binary_prf

    rng = np.random.default_rng(0)
    for n in (3, 40, 300):
        s, y = rng.random(n).round(2), (rng.random(n) < 0.2).astype(int)
        cands = np.unique(s)
        mids = np.concatenate([[cands[0] - 1e-6], (cands[1:] + cands[:-1]) / 2])
        want = max(((float(t), binary_prf(y, s >= t)["f1"]) for t in mids), key=lambda x: (x[1], x[0]))
        got = best_f1_threshold(s, y)
        assert got[0] == pytest.approx(want[0]) and got[1] == pytest.approx(want[1])
