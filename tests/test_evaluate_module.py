"""The QA-SRL `evaluate` module (metrics/qasrl_evaluate/): loaded by path with the network cut off,
it gives exactly metrics.qasrl.evaluate_records on real QA-SRL GS dev records."""
from __future__ import annotations

import copy
import json
import random
import socket
import sys

import pytest

from data_prep.records import read_jsonl
from metrics import qasrl_evaluate_path
from metrics.qasrl import InvalidRecordError, evaluate_records

N_GOLD = 150


@pytest.fixture(scope="module")
def no_network():
    """Every attempt to resolve a name or open a connection fails, and fails the tests at the end
    (even where evaluate would swallow the error and fall back)."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError(f"network access attempted: {args}")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket, "create_connection", refuse)
        mp.setattr(socket, "getaddrinfo", refuse)
        yield
    assert not attempts, f"network access attempted: {attempts}"


@pytest.fixture(scope="module")
def load(no_network, tmp_path_factory):
    """evaluate.load of the module folder, offline, with evaluate's module copy (HF_MODULES_CACHE)
    and its Arrow / lock files (cache_dir) in a temporary folder instead of ~/.cache."""
    evaluate = pytest.importorskip("evaluate")
    tmp = tmp_path_factory.mktemp("evaluate")
    saved_path = list(sys.path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_EVALUATE_OFFLINE", "1")
        mp.setattr(evaluate.config, "HF_EVALUATE_OFFLINE", True)
        mp.setattr(evaluate.config, "HF_MODULES_CACHE", tmp / "modules")
        yield lambda **kw: evaluate.load(qasrl_evaluate_path(), cache_dir=str(tmp / "cache"), **kw)
    sys.path[:] = saved_path  # init_hf_modules appended the modules cache
    for name in [n for n in sys.modules if n == "evaluate_modules" or n.startswith("evaluate_modules.")]:
        del sys.modules[name]  # the next load (another cache folder) imports afresh


def _perturb(rec: dict, rng: random.Random) -> dict:
    """A predicted copy of a gold record: some QAs dropped, some spans shifted, some wh changed."""
    pred = copy.deepcopy(rec)
    n = len(pred["tokens"])
    qas = [qa for qa in pred["qas"] if rng.random() > 0.2]
    for qa in qas:
        spans = []
        for s, e in qa["answers"]:
            if rng.random() < 0.3:
                d = rng.choice((-2, -1, 1, 2))
                s, e = min(max(0, s + d), n - 1), min(max(1, e + d), n)
                s, e = min(s, e - 1), e
            spans.append([s, e])
        qa["answers"] = spans
        if rng.random() < 0.1:
            qa["slots"]["wh"] = "when" if qa["slots"]["wh"] != "when" else "where"
    pred["qas"] = qas
    return pred


@pytest.fixture(scope="module")
def gold_pred(processed_dir):
    """(gold, pred, references, predictions): the plain lists evaluate_records takes, and the
    same records as the module's equal-length inputs, shuffled and padded with None."""
    rng = random.Random(13)
    records = list(read_jsonl(processed_dir / "qasrl-gs.dev.jsonl"))
    sample = rng.sample(records, N_GOLD + 1)
    gold, outside = sample[:N_GOLD], sample[N_GOLD]
    pred = [_perturb(rec, rng) for rec in gold]
    pred = [p for k, p in enumerate(pred) if k % 30 != 7]  # 5 gold predicates without a prediction
    pred.append(_perturb(outside, rng))                     # 1 prediction without gold
    predictions = pred + [None] * (N_GOLD + 1 - len(pred))
    rng.shuffle(predictions)                                # paired by key, not by position
    references = gold + [None]
    return gold, pred, references, predictions


@pytest.mark.parametrize("protocol,strict", [("qanom", False), ("gs", False), ("gs", True)])
def test_compute_equals_evaluate_records(load, gold_pred, protocol, strict):
    gold, pred, references, predictions = gold_pred
    expected = evaluate_records(gold, pred, protocol=protocol, strict=strict)
    assert (expected["missing_predicates"], expected["extra_predicates"]) == (5, 1)
    assert 0.3 < expected["ua"]["f1"] < 0.95 and expected["la"]["f1"] < expected["ua"]["f1"]
    if strict:  # spans at exactly IOU 0.5 occur in the sample: the option changes the numbers
        assert expected["ua"]["tp"] < evaluate_records(gold, pred, protocol=protocol)["ua"]["tp"]
    metric = load(keep_in_memory=True)
    assert metric.compute(predictions=predictions, references=references, protocol=protocol,
                          match_strict=strict) == expected
    # JSON strings are the stored form: the same numbers
    as_json = [None if r is None else json.dumps(r) for r in references]
    assert metric.compute(predictions=predictions, references=as_json, protocol=protocol,
                          match_strict=strict) == expected


def test_add_batch_equals_one_compute(load, gold_pred):
    gold, pred, references, predictions = gold_pred
    metric = load()  # Arrow cache files this time, not memory
    for i in range(0, len(references) - 3, 32):
        j = min(i + 32, len(references) - 3)
        metric.add_batch(predictions=predictions[i:j], references=references[i:j])
    for p, r in zip(predictions[-3:], references[-3:]):
        metric.add(prediction=p, reference=r)
    assert metric.compute(protocol="gs") == evaluate_records(gold, pred, protocol="gs")


def test_invalid_prediction_raises_typed_error(load, gold_pred):
    gold, _, _, _ = gold_pred
    metric = load(keep_in_memory=True)
    bad = copy.deepcopy(gold[1])
    bad["qas"][0]["answers"] = [[5, 3]]  # end before start
    with pytest.raises(InvalidRecordError) as err:  # row 1: the None at row 0 does not shift it
        metric.compute(predictions=[None, bad], references=gold[:2])
    assert (err.value.side, err.value.position) == ("predicted", 1)
    assert str(err.value).startswith("predicted record #1: ") and repr(bad["sentence_id"]) in str(err.value)
    with pytest.raises(InvalidRecordError) as lib:  # the library's message, bar the position
        evaluate_records(gold[:2], [bad])
    assert str(lib.value).split(": ", 1)[1] == str(err.value).split(": ", 1)[1]
    for text in ("{not json", json.dumps({"qas": []}), "[1, 2]"):
        with pytest.raises(InvalidRecordError, match=r"^gold record #0: not a"):
            metric.compute(predictions=[gold[0]], references=[text])
