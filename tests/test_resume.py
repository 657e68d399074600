"""The one resume rule (train/resume.py): resume=auto|never|PATH parsed once for every trainer; a PATH that is not a
checkpoint of the run's model is refused naming both; an unfinished stage resumes from its last checkpoint or is
refused saying why, never trained again from its start without a word; a pair-encoder stage killed mid-way
resumes and ends as an uninterrupted one."""
import json
from pathlib import Path

import pytest

from parser_helpers import assert_same_weights, compose_cfg

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "consistency_small.jsonl"


def test_resume_values():
    from train.resume import Resume, ResumeError, parse_resume

    assert parse_resume("auto") == Resume("auto") and parse_resume("never").fresh
    assert parse_resume("/ckpt/checkpoint-9") == Resume("path", Path("/ckpt/checkpoint-9"))
    for old in ("none", None, False, "null", ""):  # what older versions took for "start afresh"
        with pytest.raises(ResumeError, match="use resume=never"):
            parse_resume(old)
    with pytest.raises(ResumeError, match="use resume=auto"):
        parse_resume(True)


def _checkpoint(folder: Path, model) -> Path:
    model.save_pretrained(folder)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 1}))
    return folder


def _bert(hidden: int):
    from transformers import BertConfig, BertForSequenceClassification

    return BertForSequenceClassification(BertConfig(vocab_size=64, hidden_size=hidden, num_hidden_layers=1,
                                                    num_attention_heads=2, intermediate_size=16, max_position_embeddings=32))


def test_a_checkpoint_of_another_model_is_refused_naming_both(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    from train.resume import ResumeError, check_checkpoint_of

    mine = _bert(16)
    check_checkpoint_of(_checkpoint(tmp_path / "same", _bert(16)), mine)  # same names and shapes: taken
    tied = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2, n_positions=32))
    check_checkpoint_of(_checkpoint(tmp_path / "tied", tied), tied)  # lm_head saved once, tied to the embedding
    for other, what in ((_bert(32), "bert"), (tied, "gpt2")):
        with pytest.raises(ResumeError) as e:
            check_checkpoint_of(_checkpoint(tmp_path / what, other), mine)
        msg = str(e.value)
        assert f"resume={tmp_path / what}" in msg and f"another model ({what}" in msg
        assert "this run's model, a BertForSequenceClassification (bert" in msg
    (tmp_path / "same" / "trainer_state.json").unlink()  # what a kill during the save leaves
    with pytest.raises(ResumeError, match="not a complete Trainer checkpoint"):
        check_checkpoint_of(tmp_path / "same", mine)
    with pytest.raises(FileNotFoundError, match="no such checkpoint folder"):
        check_checkpoint_of(tmp_path / "nothing", mine)


def test_the_parser_refuses_a_path_of_another_model_before_training(tmp_path):
    from train.parser import train
    from train.resume import ResumeError

    other = _checkpoint(tmp_path / "bert", _bert(16))
    with pytest.raises(ResumeError, match=f"resume={other} is a checkpoint of another model \\(bert.*this run's model"):
        train(compose_cfg("train_parser", ["+experiment=tiny", "paths.output_dir=/tmp/unused", "trainer.args.max_steps=2",
                                           f"run_dir={tmp_path / 'run'}", f"resume={other}"]))
    assert not list((tmp_path / "run").glob("checkpoints/checkpoint-*"))


def test_trainers_of_stages_refuse_a_path_and_the_old_values(tmp_path):
    from train.entailment import train as train_entailment
    from train.resume import ResumeError

    over = ["classifier=tiny", f"data.train_file={FIXTURE}", "cv.folds=0"]
    with pytest.raises(ResumeError, match="train.entailment trains several stages"):
        train_entailment(compose_cfg("train_entailment", [*over, f"resume={tmp_path}"]), tmp_path / "run")
    with pytest.raises(ResumeError, match="use resume=never"):
        train_entailment(compose_cfg("train_entailment", [*over, "resume=none"]), tmp_path / "run")


def test_an_unfinished_entailment_stage_without_a_checkpoint_is_refused(tmp_path):
    """A final stage begun by a killed run before its first checkpoint: refused, saying why and what to do."""
    from train.entailment import train
    from train.resume import BEGUN_FILE, ResumeError

    stage = tmp_path / "trainer" / "final"
    stage.mkdir(parents=True)
    (stage / BEGUN_FILE).write_text(json.dumps({"note": "begun earlier"}))
    over = ["classifier=tiny", f"data.train_file={FIXTURE}", "cv.folds=0", "trainer.args.max_steps=2",
            "trainer.args.per_device_train_batch_size=2"]
    with pytest.raises(ResumeError, match=f"{stage}: the training stage final was begun by an earlier run .*no complete "
                                          "checkpoint.*Delete that folder"):
        train(compose_cfg("train_entailment", over), tmp_path)
    assert not (tmp_path / "checkpoint").exists()
    train(compose_cfg("train_entailment", [*over, "resume=never"]), tmp_path)  # afresh: every stage again
    assert (tmp_path / "checkpoint" / "stage_done.json").exists() and not stage.exists()


def _encoder_run(tmp_path, *over):
    from test_contradiction import _pairs_file

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    return compose_cfg("train_contradiction", [
        "+experiment=contradiction_tiny", f"data.train_file={pairs}", f"encoder.train_files=[{pairs}]",
        "encoder.trainer.args.max_steps=6", "encoder.trainer.args.save_steps=2", "encoder.trainer.args.per_device_train_batch_size=2",
        "divergence.stall_steps=null", *over])


def _stage(cfg, stage_dir):
    from train.contradiction.inputs import read_labelled
    from train.contradiction.pair_encoder import train_stage

    pairs = read_labelled(cfg.data.train_file, 12)
    return train_stage(cfg.encoder, pairs, stage_dir, 13, cfg)


def test_a_pair_encoder_stage_killed_midway_resumes_and_ends_the_same(tmp_path, monkeypatch):
    import train.contradiction.pair_encoder as pe
    from transformers import TrainerCallback

    cfg = _encoder_run(tmp_path)
    straight = _stage(cfg, tmp_path / "straight" / "fold0")

    class Kill(TrainerCallback):  # the process dies after its checkpoint-2 is saved
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 3:
                raise KeyboardInterrupt("killed")

    real = pe.divergence_callbacks
    monkeypatch.setattr(pe, "divergence_callbacks", lambda c: [*real(c), Kill()])
    stage_dir = tmp_path / "killed" / "fold0"
    with pytest.raises(KeyboardInterrupt):
        _stage(cfg, stage_dir)
    assert (stage_dir / "checkpoints" / "checkpoint-2").is_dir() and not (stage_dir / "model").exists()
    monkeypatch.setattr(pe, "divergence_callbacks", real)
    resumed = _stage(cfg, stage_dir)
    assert resumed.info["steps"] == straight.info["steps"] == 6
    assert_same_weights(tmp_path / "straight" / "fold0" / "model" / "model.safetensors", stage_dir / "model" / "model.safetensors")


def test_an_unfinished_encoder_stage_is_refused_and_never_moves_it_aside(tmp_path):
    from train.resume import BEGUN_FILE, ResumeError

    cfg = _encoder_run(tmp_path)
    stage_dir = tmp_path / "run" / "encoder" / "fold0"
    (stage_dir / "checkpoints").mkdir(parents=True)
    (stage_dir / "checkpoints" / BEGUN_FILE).write_text(json.dumps({"note": "begun earlier"}))
    with pytest.raises(ResumeError, match="the pair encoder stage fold0 was begun by an earlier run"):
        _stage(cfg, stage_dir)
    fresh = _stage(_encoder_run(tmp_path, "resume=never"), stage_dir)
    assert fresh.info["steps"] == 6 and (stage_dir / "model").is_dir()
    assert len(list(stage_dir.parent.glob("fold0.replaced-*"))) == 1
