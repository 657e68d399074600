"""train.parser end to end with a tiny random T5 on the shipped sample: outputs, evaluation of
the saved checkpoint, resume after SIGKILL, W&B offline files, and the errors raised before training."""
import json
import sys
from pathlib import Path

import pytest

from parser_helpers import assert_same_weights, compose_cfg, straight_and_killed_runs

ROOT = Path(__file__).resolve().parents[1]
TINY = ["+experiment=tiny", "paths.output_dir=/tmp/unused"]


def run_train(tmp_path, *overrides):
    from train.parser import train

    cfg = compose_cfg("train_parser", TINY + [f"run_dir={tmp_path}", *overrides])
    return train(cfg)


def test_tiny_run_writes_outputs_and_evaluates(tmp_path):
    metrics = run_train(tmp_path / "run")
    run = tmp_path / "run"
    for f in ("all_results.json", "dev_metrics.json", "dev_predictions.jsonl", "best/qa_format.json",
              "best/config.json", "best/generation_config.json", "best/tokenizer.json"):
        assert (run / f).exists(), f
    assert metrics["sample_data"] is True and "eval_ua_f1" in metrics
    assert json.loads((run / "all_results.json").read_text())["train_predicates"] == 10
    preds = [json.loads(l) for l in (run / "dev_predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 3 and all("generated" in p for p in preds)
    # every checkpoint carries the format, so any of them can be evaluated or published
    assert all((c / "qa_format.json").exists() for c in (run / "checkpoints").glob("checkpoint-*"))

    from evaluation.parser import evaluate

    cfg = compose_cfg("eval_parser", [f"checkpoint={run / 'best'}", "split=dev", "paths.data_dir=data/raw",
                                      "paths.processed_dir=/nonexistent"])
    res = evaluate(cfg, tmp_path / "eval")
    assert set(res) >= {"overall", "sample"}
    assert set(res["overall"]["decode"]) >= {"malformed", "unaligned", "invalid_question"}
    assert (tmp_path / "eval" / "predictions.sample.dev.jsonl").exists()


def _cmd(run_dir, *extra):
    return [sys.executable, "-m", "train.parser", "+experiment=tiny", f"hydra.run.dir={run_dir}",
            "trainer.args.max_steps=40", "trainer.args.eval_steps=5", "trainer.args.save_total_limit=null", *extra]


def test_sigkill_and_rerun_gives_the_same_result(tmp_path):
    straight, killed = straight_and_killed_runs(_cmd, tmp_path, "checkpoint-15", "all_results.json", timeout=120)
    assert_same_weights(*(d / "checkpoints" / "checkpoint-40" / "model.safetensors" for d in (straight, killed)))
    ra, rb = (json.loads((d / "all_results.json").read_text()) for d in (straight, killed))
    assert ra["eval_loss"] == pytest.approx(rb["eval_loss"], rel=1e-5)
    la = [h["loss"] for h in json.loads((straight / "checkpoints/checkpoint-40/trainer_state.json").read_text())["log_history"] if "loss" in h]
    lb = [h["loss"] for h in json.loads((killed / "checkpoints/checkpoint-40/trainer_state.json").read_text())["log_history"] if "loss" in h]
    assert la == pytest.approx(lb, rel=1e-5)


def test_wandb_offline_run_files_hold_the_config_without_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    run_train(tmp_path / "run", "logger=wandb", "+logger.api_key=SUPERSECRET123")
    runs = list((tmp_path / "run" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    # offline, the config and metrics live in the run's .wandb record log
    log_bytes = next(runs[0].glob("run-*.wandb")).read_bytes()
    assert b"tiny_t5" in log_bytes and b"qasem_parser" in log_bytes and b"eval/ua_f1" in log_bytes
    assert list((runs[0] / "files" / "media" / "table").glob("dev_predictions*.table.json"))
    every = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    assert b"SUPERSECRET123" not in every


@pytest.mark.parametrize("override,error", [
    (["+trainer.args.fp16=true"], "fp16"),
    (["model.kind=nonsense"], "model.kind"),
    (["format=no_such_format"], "no_such_format"),
    (["data=offline", "paths.data_dir=/no/such/dir", "paths.processed_dir=/no/such/processed"], "/no/such/dir"),
])
def test_bad_config_fails_before_training(tmp_path, override, error):
    with pytest.raises((ValueError, FileNotFoundError), match=error):
        run_train(tmp_path / "run", *override)
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_nan_loss_stops_with_the_step(tmp_path):
    from train.divergence import DivergenceError

    with pytest.raises(DivergenceError, match=r"at step \d+"):
        run_train(tmp_path / "run", "trainer.args.learning_rate=1e30", "trainer.args.max_steps=30",
                  "+trainer.args.max_grad_norm=0")


def test_checkpoint_without_format_is_refused(tmp_path):
    from models.parser import QASemParser

    (tmp_path / "ckpt").mkdir()
    with pytest.raises(FileNotFoundError, match="qa_format.json"):
        QASemParser.from_pretrained(tmp_path / "ckpt")


def test_eval_predictions_come_back_with_their_record_index(tmp_path):
    """Eval batches are length-grouped (reordered): prediction_step returns each row's record index
    as its label so compute_metrics can pair every generated text with its own record."""
    from omegaconf import OmegaConf
    from transformers import Seq2SeqTrainingArguments

    from models.parser import QASemParser
    from models.parser.qa_format import get_format
    from train.parser.families import build_family
    from common.data import SAMPLE_DIR, load_split, tokenize
    from train.parser.seq2seq_trainer import IndexedCollator, ParserTrainer

    cfg = OmegaConf.load(ROOT / "conf" / "model" / "tiny_t5.yaml")
    fmt = get_format("qasem_parser")
    family = build_family(cfg)
    tok = family.build_tokenizer(fmt)
    model = family.build_model(tok)
    records = load_split(SAMPLE_DIR, [], "train", None, 0, True)
    ds = tokenize(records, fmt, tok, 64, 48, with_index=True)
    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path), use_cpu=True, predict_with_generate=True,
                                    remove_unused_columns=False, report_to=[], per_device_eval_batch_size=4,
                                    train_sampling_strategy="group_by_length")
    trainer = ParserTrainer(model=model, args=args, eval_dataset=ds, processing_class=tok,
                            data_collator=IndexedCollator(tok, model),
                            parser=QASemParser(model, tok, fmt, device="keep"), eval_records=records)
    out = trainer.predict(ds)
    order = out.label_ids[:, 0].tolist()
    assert sorted(order) == list(range(len(records)))
    assert order != list(range(len(records)))  # the eval sampler did reorder: the index is needed
