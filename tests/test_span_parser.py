"""The span-first parser: question templates on real data, span decoding, bad input, a tiny run
through train.parser (outputs, learning, evaluation.parser on its checkpoint, SIGKILL resume),
and the Hub round trip through the one loader."""
import json
import sys
from pathlib import Path

import pytest
import torch

from parser_helpers import assert_same_weights, compose_cfg, straight_and_killed_runs

ROOT = Path(__file__).resolve().parents[1]
TINY = ["+experiment=span_tiny", "paths.output_dir=/tmp/unused"]


def run_train(run_dir, *overrides):
    from train.parser import train

    return train(compose_cfg("train_parser", TINY + [f"run_dir={run_dir}", *overrides]))


# ---------------------------------------------------------------------------- templates
@pytest.mark.parametrize("slots,verb_form,cls", [
    ({"aux": "is", "verb": "being suspended"}, "suspend", "PASTPART"),
    ({"aux": "was", "verb": "suspending"}, "suspend", "ING"),
    ({"aux": "has", "verb": "given"}, "give", "PASTPART"),
    ({"aux": "might", "verb": "not give"}, "give", "STEM"),
    ({"aux": "_", "verb": "gives"}, "give", "S3"),
    ({"aux": "_", "verb": "gave"}, "give", "PAST"),
    ({"aux": "_", "verb": "put"}, "put", "PAST"),
])
def test_inflection_class_follows_the_grammar(slots, verb_form, cls):
    from models.parser.question_templates import inflection_class

    assert inflection_class(slots, verb_form) == cls


def test_templates_round_trip_real_questions_with_their_roles(processed_dir):
    """Gold question -> template -> question with the predicate's verb form: the role (what LA
    scores) never changes, and the text comes back for nearly every question."""
    from data_prep.records import read_jsonl
    from metrics.roles import qa_role
    from models.parser.question_templates import build_vocabulary, realise, template_of

    train = list(read_jsonl(processed_dir / "qanom.train.jsonl"))
    templates, table, left_out = build_vocabulary(train)
    assert 500 < len(templates) < 5000 and left_out["qas"] < 0.08 * sum(len(r["qas"]) for r in train)
    n = same = 0
    for rec in read_jsonl(processed_dir / "qanom.dev.jsonl"):
        for qa in rec["qas"]:
            q = realise(template_of(qa["slots"], rec["verb_form"]), rec["verb_form"], table)
            assert qa_role(q) == qa_role(qa), (qa["question"], q["question"])
            n += 1
            same += q["question"].lower() == " ".join(qa["question"].lower().split())
    assert same / n > 0.95


# ---------------------------------------------------------------------------- decoding
def test_decoding_keeps_the_most_probable_of_overlapping_spans():
    from models.parser.span import decode_spans

    probs = torch.zeros(6, 3)
    probs[0, 1] = 0.9   # words 0-1
    probs[1, 0] = 0.6   # word 1: overlaps 0-1, dropped
    probs[3, 2] = 0.7   # words 3-5
    probs[5, 0] = 0.2   # below the threshold
    probs[4, 2] = 0.99  # 4..6 runs past the sentence end: never a span
    assert decode_spans(probs, 6, 0.5) == [(0, 2, pytest.approx(0.9)), (3, 6, pytest.approx(0.7))]
    assert [s[:2] for s in decode_spans(probs, 6, 0.1)] == [(0, 2), (3, 6)]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("span") / "run"
    metrics = run_train(run, "trainer.args.max_steps=60", "trainer.args.eval_steps=30",
                        "trainer.args.learning_rate=1e-2")
    return run, metrics


def test_tiny_run_writes_the_parser_run_directory(tiny_run):
    run, metrics = tiny_run
    for f in ("all_results.json", "dev_metrics.json", "dev_predictions.jsonl", "best/config.json",
              "best/model.safetensors", "best/tokenizer.json", "best/parser_config.json"):
        assert (run / f).exists(), f
    assert json.loads((run / "best" / "parser_config.json").read_text()) == {"kind": "span"}
    dev = json.loads((run / "dev_metrics.json").read_text())
    assert {"ua", "la", "threshold"} <= set(dev)
    config = json.loads((run / "best" / "config.json").read_text())
    assert config["thresholds"] == dev["threshold"] and set(dev["threshold"]) == {"verbal", "nominal"}
    assert config["threshold"] in [round(x * 0.05, 2) for x in range(1, 20)] and config["templates"]
    assert metrics["eval_ua_f1"] == pytest.approx(dev["ua"]["f1"])
    assert all((c / "parser_config.json").exists() for c in (run / "checkpoints").glob("checkpoint-*"))


def test_tiny_model_learns_the_training_spans(tiny_run):
    """60 steps at a high learning rate fit the 10 training predicates: the span head and the
    question head really train (an untrained model finds none of them)."""
    from common.data import SAMPLE_DIR, load_split
    from metrics.qasrl import evaluate_records
    from models.parser import load_parser

    run, _ = tiny_run
    train = load_split(SAMPLE_DIR, [], "train", None, 0, True)
    parser = load_parser(run / "checkpoints" / "checkpoint-60", device="cpu")
    m = evaluate_records(train, parser.predict(train, threshold=0.5)[0])
    assert m["ua"]["f1"] > 0.8 and m["la"]["f1"] > 0.35, m  # untrained: no span; chance LA about 0.07


def test_evaluation_parser_takes_a_span_checkpoint(tiny_run, tmp_path):
    from evaluation.parser import evaluate

    run, _ = tiny_run
    cfg = compose_cfg("eval_parser", [f"checkpoint={run / 'best'}", "split=dev", "paths.data_dir=data/raw",
                                      "paths.processed_dir=/nonexistent"])
    res = evaluate(cfg, tmp_path / "eval")
    assert res["parser_kind"] == "span" and {"ua", "la", "role"} <= set(res["overall"])
    preds = [json.loads(l) for l in (tmp_path / "eval" / "predictions.sample.dev.jsonl").read_text().splitlines()]
    assert len(preds) == 3
    for p in preds:
        for qa in p["qas"]:
            assert qa["question"].endswith("?") and set(qa["slots"]) == {"wh", "aux", "subj", "verb", "obj",
                                                                         "prep", "obj2"}
            assert all(0 <= s < e <= len(p["tokens"]) for s, e in qa["answers"])


def test_a_threshold_per_predicate_type_and_the_overrides(tiny_run, tmp_path):
    """Each type decodes at its own threshold; threshold= overrides with one number or one per
    type; a checkpoint from before (one `threshold`, no `thresholds`) decodes exactly as it did."""
    import shutil

    from common.data import SAMPLE_DIR, load_split
    from models.parser import load_parser

    run, _ = tiny_run
    dev = load_split(SAMPLE_DIR, [], "dev", None, 0, True)
    recs = [dict(r, predicate_type=t) for r in dev for t in ("verbal", "nominal")]
    parser = load_parser(run / "best", device="cpu")
    split = parser.predict(recs, threshold={"verbal": 0.2, "nominal": 0.9})[0]
    low, high = parser.predict(recs, threshold=0.2)[0], parser.predict(recs, threshold=0.9)[0]
    assert split[0::2] == low[0::2] and split[1::2] == high[1::2]
    with pytest.raises(ValueError, match="per type"):
        parser.predict(recs, threshold={"verbal": 0.2})

    old = tmp_path / "old"
    shutil.copytree(run / "best", old)
    config = json.loads((old / "config.json").read_text())
    config.pop("thresholds")
    config["threshold"] = 0.35
    (old / "config.json").write_text(json.dumps(config))
    before = load_parser(old, device="cpu")
    assert before.thresholds == {"verbal": 0.35, "nominal": 0.35}
    assert before.predict(recs)[0] == parser.predict(recs, threshold=0.35)[0]


def test_bad_records_get_no_qas_and_are_counted_not_crashing_the_batch(tiny_run):
    from models.parser import load_parser

    run, _ = tiny_run
    parser = load_parser(run / "best", device="cpu")
    good = {"sentence_id": "g", "tokens": "The man gave the book to his friend .".split(), "predicate_index": 2,
            "predicate_type": "verbal", "verb_form": "give"}
    long = {**good, "sentence_id": "long", "tokens": ["word"] * 150 + good["tokens"], "predicate_index": 152}
    records = [good, {**good, "sentence_id": "out", "predicate_index": 99},
               {**good, "sentence_id": "empty", "tokens": [], "predicate_index": 0}, long]
    preds, counts = parser.predict(records, threshold=0.0)
    assert [p["sentence_id"] for p in preds] == ["g", "out", "empty", "long"]
    assert counts["invalid_input"] == 2 and preds[1]["qas"] == [] and preds[2]["qas"] == []
    assert counts["windowed"] == 1  # 150+ words do not fit 64 subwords: a window around the predicate
    spans = [s for qa in preds[3]["qas"] for s in qa["answers"]]
    assert spans and all(100 < s and e <= len(long["tokens"]) for s, e in spans)  # near the predicate


def _cmd(run_dir):
    return [sys.executable, "-m", "train.parser", "+experiment=span_tiny", f"hydra.run.dir={run_dir}",
            "trainer.args.max_steps=40", "trainer.args.eval_steps=5", "trainer.args.save_total_limit=null",
            "trainer.args.dataloader_num_workers=0"]


def test_sigkill_and_rerun_gives_the_same_result(tmp_path):
    straight, killed = straight_and_killed_runs(_cmd, tmp_path, "checkpoint-15", "all_results.json", timeout=120)
    assert_same_weights(*(d / "checkpoints" / "checkpoint-40" / "model.safetensors" for d in (straight, killed)))
    ra, rb = (json.loads((d / "dev_metrics.json").read_text()) for d in (straight, killed))
    assert ra["ua"] == rb["ua"] and ra["threshold"] == rb["threshold"]


def test_pushed_span_checkpoint_loads_by_hub_id(tiny_run, tmp_path, monkeypatch):
    from huggingface_hub.utils import close_session

    from hub_server import run_hub_server, use_hub_endpoint
    from models.parser import load_parser
    from train.parser import publish

    run, _ = tiny_run
    local = load_parser(run / "best", device="cpu")
    record = {"sentence_id": "g", "tokens": "The man gave the book to his friend .".split(), "predicate_index": 2,
              "predicate_type": "verbal", "verb_form": "give"}
    with run_hub_server(tmp_path) as (endpoint, store):
        use_hub_endpoint(monkeypatch, endpoint, tmp_path / "hf-cache")
        cfg = compose_cfg("train_parser", ["+experiment=span_tiny", "hub=push", "hub.repo_id=user/span-tiny"])
        dev = json.loads((run / "dev_metrics.json").read_text())
        assert publish(cfg, run / "best", dev) is not None
        readme = store.files("user/span-tiny")["README.md"].decode()
        remote = load_parser("user/span-tiny", device="cpu")
        close_session()
    assert "span-first" in readme and f"{dev['ua']['f1']}" in readme
    assert remote.kind == "span" and remote.threshold == local.threshold
    assert remote.predict([record], threshold=0.0)[0] == local.predict([record], threshold=0.0)[0]


def test_bf16_inference_runs_and_keeps_the_records(tiny_run):
    from common.data import SAMPLE_DIR, load_split
    from models.parser import load_parser

    run, _ = tiny_run
    dev = load_split(SAMPLE_DIR, [], "dev", None, 0, True)
    fp32, _ = load_parser(run / "best", device="cpu").predict(dev, threshold=0.3)
    bf16, counts = load_parser(run / "best", device="cpu", bf16=True).predict(dev, threshold=0.3)
    assert [p["sentence_id"] for p in bf16] == [p["sentence_id"] for p in fp32] and counts["invalid_input"] == 0
    for p in bf16:
        assert all(0 <= s < e <= len(p["tokens"]) for qa in p["qas"] for s, e in qa["answers"])


@pytest.mark.parametrize("encoder_type", ["bert", "mpnet"])
def test_training_memory_savers_give_the_same_loss_and_gradients(tiny_run, encoder_type):
    """train_chunk_words (the span grid a chunk of words at a time, recomputed in backward) and the encoder's
    activation checkpointing change what is held between forward and backward, not the loss or the gradients.
    MPNet: transformers 5 does not checkpoint its layers (it raised), the model does it itself."""
    from common.data import SAMPLE_DIR, load_split
    from models.parser.span import SpanParserConfig, SpanParserModel
    from models.parser.span_features import Encoder, collate
    from train.parser.span import featurize

    run, _ = tiny_run
    model = SpanParserModel.from_pretrained(run / "best")
    if encoder_type == "mpnet":  # the same parser on a tiny random MPNet (2 layers)
        c = model.config.to_dict()
        c["encoder"] = {"model_type": "mpnet", "vocab_size": 30527, "hidden_size": 32, "num_hidden_layers": 2,
                        "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 130}
        torch.manual_seed(0)
        model = SpanParserModel(SpanParserConfig(**{k: v for k, v in c.items() if k != "model_type"}))
        assert type(model.encoder).__name__ == "MPNetModel"
    model.config.dropout = 0.0
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    from transformers import AutoTokenizer

    tok, c = AutoTokenizer.from_pretrained(run / "best"), model.config
    records = load_split(SAMPLE_DIR, [], "train", None, 0, True)
    ds, _ = featurize(records, Encoder(tok, c.markers, c.max_subwords, c.max_span_width), c.templates)
    feats = list(ds)[:8]
    batch = collate(feats, tok.pad_token_id, c.max_span_width)
    assert batch["question_labels"].numel() > 0 and batch["word_index"].shape[1] > 3

    # model.train_pad_multiple: the batch padded to a multiple of 16 subwords / words (masked, so the same loss)
    padded = collate(feats, tok.pad_token_id, c.max_span_width, multiple=16)
    assert padded["input_ids"].shape[1] % 16 == 0 and padded["word_index"].shape[1] % 16 == 0
    assert padded["input_ids"].shape[1] > batch["input_ids"].shape[1]

    def loss_and_grads(chunk, checkpointing, pad=False):
        model.train()
        model.train_chunk_words = chunk
        (model.activation_checkpointing_enable if checkpointing else model.activation_checkpointing_disable)()
        assert any(getattr(m, "gradient_checkpointing", False) for m in model.encoder.modules()) == checkpointing
        model.zero_grad()
        loss = model(**(padded if pad else batch))["loss"]
        loss.backward()
        return loss.item(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    loss, grads = loss_and_grads(0, False)
    for chunk, checkpointing, pad in ((3, False, False), (0, True, False), (3, True, False), (0, False, True),
                                      (3, True, True)):
        other_loss, other = loss_and_grads(chunk, checkpointing, pad)
        assert other_loss == pytest.approx(loss, rel=1e-5) and other.keys() == grads.keys()
        for name, g in grads.items():
            assert torch.allclose(other[name], g, rtol=1e-4, atol=1e-6), (chunk, checkpointing, pad, name)


def test_shape_buckets_pad_without_changing_the_parse(tiny_run, monkeypatch):
    """QASEM_PAD_MULTIPLE (models/memory.py) pads the batches' lengths to a few sizes; the padding is masked,
    so the span probabilities and the QAs are those of the exact lengths."""
    import torch

    from common.data import SAMPLE_DIR, load_split
    from models.parser import load_parser

    run, _ = tiny_run
    dev = load_split(SAMPLE_DIR, [], "dev", None, 0, True)
    parser = load_parser(run / "best", device="cpu")
    monkeypatch.setenv("QASEM_PAD_MULTIPLE", "1")
    exact, _, _, _ = parser.span_probabilities(dev, 0.3)
    qas, _ = parser.predict(dev, threshold=0.3)
    monkeypatch.setenv("QASEM_PAD_MULTIPLE", "32")
    bucketed, _, _, _ = parser.span_probabilities(dev, 0.3)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(exact, bucketed))
    assert parser.predict(dev, threshold=0.3)[0] == qas


def test_parser_ensemble_rechooses_thresholds_on_dev_and_averages_grids(tiny_run, tmp_path):
    """evaluation.parser_ensemble: a checkpoint alone decodes test as the parser itself does at the
    thresholds chosen on dev; the mean of one grid twice is that grid (the ensemble changes nothing);
    the grids are computed once per checkpoint and split (the second entry reads the cache)."""
    from common.data import SAMPLE_DIR, load_split
    from evaluation.parser_ensemble import evaluate
    from models.parser import load_parser

    run, _ = tiny_run
    best = run / "best"
    cfg = compose_cfg("eval_parser_ensemble", [f"checkpoints=[{best},{best}]", "paths.data_dir=data/raw",
                                               "paths.processed_dir=/nonexistent", f"grid_cache={tmp_path / 'grids'}"])
    res = evaluate(cfg, tmp_path / "eval")
    assert set(res["test"]) == {"model0", "model1", "ensemble"}
    assert res["test"]["ensemble"] == res["test"]["model0"] == res["test"]["model1"]
    assert res["thresholds"]["ensemble"] == res["thresholds"]["model0"]
    assert set(res["thresholds"]["model0"]) == {"verbal", "nominal"}
    test = load_split(SAMPLE_DIR, [], "test", None, 0, True)
    preds = [json.loads(l) for l in (tmp_path / "eval" / "predictions.model0.sample.test.jsonl").read_text().splitlines()]
    parser = load_parser(best, device="cpu")
    assert preds == parser.predict(test, threshold=res["thresholds"]["model0"])[0]
    assert len(list((tmp_path / "grids").glob("*.pt"))) == 2  # dev and test, once

    cfg.weights = "dev"  # the weight chosen on dev from the grid, over the cached grids
    res = evaluate(cfg, tmp_path / "weighted")
    assert res["ensemble_weights"][0] in cfg.weight_grid and sum(res["ensemble_weights"]) == pytest.approx(1.0)
    assert res["test"]["ensemble"]["overall"]["ua"]["f1"] == pytest.approx(res["test"]["model0"]["overall"]["ua"]["f1"],
                                                                          abs=0.02)


def test_the_run_sets_its_own_thread_count(tmp_path, monkeypatch):
    """`threads` (1 by default), not the machine's core count or the shell's OMP_NUM_THREADS: a sum split over
    another number of threads gives other weights, so the same command must run the same number."""
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    run_train(tmp_path / "one", "trainer.args.max_steps=2", "trainer.args.eval_steps=2")
    run_train(tmp_path / "three", "trainer.args.max_steps=2", "trainer.args.eval_steps=2", "threads=3")
    run_train(tmp_path / "own", "trainer.args.max_steps=2", "trainer.args.eval_steps=2", "threads=null")
    assert calls == [1, 3]
