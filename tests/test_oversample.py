"""data.oversample: a training file's records repeated (QANom beside the larger QA-SRL Bank), checked
before anything loads, and counted once by the span parser's question vocabulary."""
import json

import pytest

from parser_helpers import compose_cfg


def _write(folder, name, n):
    with open(folder / f"{name}.jsonl", "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"{name}-{i}"}) + "\n")


def test_a_file_is_repeated_and_the_others_are_not(tmp_path):
    from common.data import load_split

    _write(tmp_path, "a", 3)
    _write(tmp_path, "b", 5)
    recs = load_split(tmp_path, ["a", "b"], "train", None, 0, False, {"a": 3})
    ids = [r["id"] for r in recs]
    assert len(ids) == 3 * 3 + 5 and ids.count("a-0") == 3 and ids.count("b-4") == 1
    # the cap applies first (the same seeded sample), then the repeats
    capped = load_split(tmp_path, ["a", "b"], "train", 2, 0, False, {"a": 2})
    assert len(capped) == 2 * 2 + 2 and len({r["id"] for r in capped if r["id"].startswith("a")}) == 2


@pytest.mark.parametrize("spec,message", [
    ({"qanom.dev": 2}, "not a training file"),
    ({"qanom.train": 0}, "whole number >= 1"),
    ({"qanom.train": 1.5}, "whole number >= 1"),
    ({"qanom.train": True}, "whole number >= 1"),
])
def test_a_wrong_oversample_names_the_key(spec, message):
    from common.data import oversample_of

    with pytest.raises(ValueError, match=message):
        oversample_of(spec, ["qanom.train", "qasrl-bank.train-offline"])


def test_the_offline_configs_take_the_override():
    cfg = compose_cfg("train_parser", ["+experiment=span_cpu", "data.oversample={qanom.train:3}"])
    assert dict(cfg.data.oversample) == {"qanom.train": 3}
    assert compose_cfg("train_parser", ["+experiment=span_cpu"]).data.oversample is None


def test_a_tiny_run_trains_on_the_repeats_with_the_same_vocabulary(tmp_path):
    """The sample's 10 training predicates x 3 reach the trainer; the question vocabulary is the one
    built from the 10 (a template seen once is not let in by its repeats)."""
    from train.parser import train

    tiny = ["+experiment=span_tiny", "paths.output_dir=/tmp/unused", "trainer.args.max_steps=2",
            "trainer.args.eval_steps=2"]
    plain = train(compose_cfg("train_parser", tiny + [f"run_dir={tmp_path / 'plain'}"]))
    repeated = train(compose_cfg("train_parser", tiny + [f"run_dir={tmp_path / 'x3'}", "data.oversample={train:3}"]))
    assert repeated["train_predicates"] == 3 * plain["train_predicates"] == 30
    assert repeated["templates"] == plain["templates"]
    assert repeated["training_spans"]["spans"] == 3 * plain["training_spans"]["spans"]
