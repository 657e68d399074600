"""A run directory holds one live run of one configuration (train/run_guard.py), a kill during a
save never blocks the resume, and a diverged run stops (train/divergence.py): the faults a killed or
rerun training meets."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from parser_helpers import assert_same_weights, compose_cfg

ROOT = Path(__file__).resolve().parents[1]
TINY = ["+experiment=tiny", "paths.output_dir=/tmp/unused", "trainer.args.max_steps=6", "trainer.args.eval_steps=3"]


def run_train(run_dir, *overrides):
    from train.parser import train

    return train(compose_cfg("train_parser", TINY + [f"run_dir={run_dir}", *overrides]))


def test_rerun_under_another_config_is_refused_and_says_what_differs(tmp_path):
    from train.run_guard import ConfigMismatchError

    run_train(tmp_path)
    stamp = (tmp_path / "best" / "model.safetensors").stat().st_mtime_ns
    with pytest.raises(ConfigMismatchError) as err:
        run_train(tmp_path, "trainer.args.learning_rate=0.5", "seed=7", "max_source_length=32")
    msg = str(err.value)
    for line in ("trainer.args.learning_rate: 0.001 -> 0.5", "seed: 42 -> 7", "max_source_length: 64 -> 32"):
        assert line in msg, msg
    assert "resume=never" in msg
    assert (tmp_path / "best" / "model.safetensors").stat().st_mtime_ns == stamp  # nothing was touched
    # the same configuration, with another time budget or logger, still resumes
    run_train(tmp_path, "max_train_minutes=30", "trainer.args.logging_steps=2")


def test_resume_never_starts_afresh_and_keeps_the_old_checkpoints_aside(tmp_path):
    run_train(tmp_path)
    old = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    metrics = run_train(tmp_path, "trainer.args.learning_rate=0.01", "resume=never")
    assert metrics["epoch"] > 0
    aside = list(tmp_path.glob("checkpoints.replaced-*"))
    assert len(aside) == 1 and sorted(p.name for p in aside[0].iterdir()) == old
    stored = json.loads((tmp_path / "run_config.json").read_text())
    assert stored["config"]["trainer.args.learning_rate"] == 0.01


def test_a_second_live_run_in_the_same_directory_is_refused(tmp_path):
    from train.run_guard import RunDirectoryLockedError, run_dir_lock

    with run_dir_lock(tmp_path):  # the first run, still alive
        with pytest.raises(RunDirectoryLockedError, match=f"{tmp_path}.*in use by a live run"):
            run_train(tmp_path)
    assert not (tmp_path / "checkpoints").exists()
    run_train(tmp_path)  # the lock goes with its holder


def test_the_lock_is_refused_across_processes_and_freed_by_a_kill(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from train.run_guard import run_dir_lock\n"
                               f"with run_dir_lock(Path({str(tmp_path)!r})):\n print('held', flush=True); time.sleep(60)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        out = subprocess.run([sys.executable, "-m", "train.parser", *TINY, f"hydra.run.dir={tmp_path}"], cwd=ROOT,
                             capture_output=True, text=True)
        said = out.stdout + out.stderr
        assert out.returncode != 0 and "in use by a live run" in said and f"pid {holder.pid}" in said
    finally:
        holder.kill()
        holder.wait()
    from train.run_guard import run_dir_lock

    with run_dir_lock(tmp_path):  # SIGKILL released it: no stale lock
        pass


# Run train.parser with the Trainer's RNG-state save (after the weights and optimizer, before
# trainer_state.json) killing the process at one checkpoint: a real kill in the middle of a save.
KILL_DURING_SAVE = """
import os, runpy, signal, sys
import transformers.trainer as t
save = t.Trainer._save_rng_state
def killing_save(self, output_dir):
    save(self, output_dir)
    if output_dir.endswith(os.environ["KILL_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)
t.Trainer._save_rng_state = killing_save
sys.argv = ["train.parser", *sys.argv[1:]]
runpy.run_module("train.parser", run_name="__main__")
"""


def test_a_kill_during_a_save_resumes_from_the_newest_complete_checkpoint(tmp_path):
    import os

    args = [*TINY, "trainer.args.max_steps=9", "trainer.args.save_total_limit=null"]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "train.parser", *args, f"hydra.run.dir={straight}"], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    cut = subprocess.run([sys.executable, "-c", KILL_DURING_SAVE, *args, f"hydra.run.dir={killed}"], cwd=ROOT,
                         env={**env, "KILL_AT": "checkpoint-6"}, capture_output=True, text=True)
    assert cut.returncode == -9, cut.stderr[-2000:]
    half = killed / "checkpoints" / "checkpoint-6"
    assert (half / "model.safetensors").exists() and not (half / "trainer_state.json").exists()
    out = subprocess.run([sys.executable, "-m", "train.parser", *args, f"hydra.run.dir={killed}"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    said = out.stdout + out.stderr  # Hydra's job log goes to stdout
    assert "checkpoint-6 is incomplete" in said and "resuming from" in said
    assert "checkpoint-3" in said.split("resuming from")[1].splitlines()[0]
    assert_same_weights(*(d / "checkpoints" / "checkpoint-9" / "model.safetensors" for d in (straight, killed)))


def test_an_incomplete_newest_checkpoint_is_skipped_with_a_warning(tmp_path, caplog):
    from train.run_guard import last_complete_checkpoint

    for step, state in ((2, "{}"), (4, "{}"), (6, '{"log_hist')):  # 6: trainer_state.json cut mid-write
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(state)
    (tmp_path / "checkpoint-8").mkdir()  # 8: killed before trainer_state.json
    with caplog.at_level("WARNING"):
        assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-4")
    assert "checkpoint-8 is incomplete" in caplog.text and "checkpoint-6 is incomplete" in caplog.text


def test_predicate_trainer_refuses_another_config(tmp_path):
    from train.predicates import VOLATILE_KEYS
    from train.run_guard import ConfigMismatchError, claim_run_dir

    cfg = compose_cfg("train_predicates", [f"output_dir={tmp_path}"])
    with claim_run_dir(cfg, tmp_path, "train.predicates", VOLATILE_KEYS):
        pass
    other = compose_cfg("train_predicates", [f"output_dir={tmp_path}", "trainer.args.learning_rate=1"])
    with pytest.raises(ConfigMismatchError, match="trainer.args.learning_rate: 0.0001 -> 1"):
        with claim_run_dir(other, tmp_path, "train.predicates", VOLATILE_KEYS):
            pass
    budget = compose_cfg("train_predicates", [f"output_dir={tmp_path}", "max_train_minutes=5", "hub=push"])
    with claim_run_dir(budget, tmp_path, "train.predicates", VOLATILE_KEYS):
        pass


def test_a_learning_rate_far_too_high_stops_as_not_learning(tmp_path):
    from train.divergence import DivergenceError

    with pytest.raises(DivergenceError, match=r"loss has not moved from 10\.\d+ over the last 10 steps, at step 1[12] "):
        run_train(tmp_path, "trainer.args.learning_rate=1e6", "trainer.args.max_steps=40", "trainer.args.eval_steps=40",
                  "divergence.stall_steps=10")
    assert not (tmp_path / "best").exists()


def test_a_learning_rate_far_too_low_stops_as_not_learning(tmp_path):
    from train.divergence import DivergenceError

    with pytest.raises(DivergenceError, match=r"has not fallen 1% below where it started .* at step \d+ "):
        run_train(tmp_path, "trainer.args.learning_rate=1e-12", "trainer.args.max_steps=40",
                  "trainer.args.eval_steps=40", "divergence.stall_steps=20")


def test_a_learning_run_is_not_stopped(tmp_path):
    metrics = run_train(tmp_path, "trainer.args.max_steps=20", "trainer.args.eval_steps=20", "divergence.stall_steps=10")
    assert metrics["train_loss"] > 0 and (tmp_path / "best").is_dir()


def test_a_non_finite_gradient_norm_stops_with_the_step():
    import torch

    from train.divergence import DivergenceError, StopOnNonFiniteLoss

    class Trainer:
        state = type("State", (), {"global_step": 11})()

        def _get_grad_norm(self, model, grad_norm=None):
            return torch.tensor(float("inf"))

    class Guarded(StopOnNonFiniteLoss, Trainer):
        pass

    with pytest.raises(DivergenceError, match=r"non-finite gradient norm \(inf\) at step 12"):
        Guarded()._get_grad_norm(None)


def test_options_the_code_added_since_the_stored_run_resume_at_their_defaults(tmp_path, caplog):
    """A release run again after an upgrade: the trainer's config gained a group (its defaults keep the old
    behaviour), the stored run predates it. Left at the defaults it is the same run; set on the command line
    it is a choice the stored run never made."""
    from train.predicates import VOLATILE_KEYS
    from train.run_guard import CONFIG_FILE, ConfigMismatchError, added_defaults, claim_run_dir

    cfg = compose_cfg("train_predicates", [f"output_dir={tmp_path}"])
    with claim_run_dir(cfg, tmp_path, "train.predicates", VOLATILE_KEYS):
        pass
    stored = json.loads((tmp_path / CONFIG_FILE).read_text())
    lr = stored["config"].pop("trainer.args.learning_rate")  # as if the stored run's code had no such option
    from train.run_guard import config_hash
    stored["hash"] = config_hash(stored["config"])
    (tmp_path / CONFIG_FILE).write_text(json.dumps(stored))
    with caplog.at_level("WARNING"):
        with claim_run_dir(cfg, tmp_path, "train.predicates", VOLATILE_KEYS):
            pass
    assert f"trainer.args.learning_rate={lr!r}" in caplog.text
    assert "trainer.args.learning_rate" in json.loads((tmp_path / CONFIG_FILE).read_text())["config"]
    assert added_defaults({"a": 1}, {"a": 1, "g.k": 2, "h.k": 3}, {"g"}) == {"h.k"}
    (tmp_path / CONFIG_FILE).write_text(json.dumps(stored))
    other = compose_cfg("train_predicates", [f"output_dir={tmp_path}", "seed=7"])
    with pytest.raises(ConfigMismatchError, match="seed"):
        with claim_run_dir(other, tmp_path, "train.predicates", VOLATILE_KEYS):
            pass


def test_an_option_the_code_removed_since_the_stored_run_resumes_and_is_named(tmp_path, caplog):
    """A recipe said another way (an option gone, its choice now the recipe's): the stored run resumes, and
    the log names what it had set; anything else that differs still refuses."""
    from train.predicates import VOLATILE_KEYS
    from train.run_guard import CONFIG_FILE, ConfigMismatchError, claim_run_dir, config_hash

    cfg = compose_cfg("train_predicates", [f"output_dir={tmp_path}"])
    with claim_run_dir(cfg, tmp_path, "train.predicates", VOLATILE_KEYS):
        pass
    stored = json.loads((tmp_path / CONFIG_FILE).read_text())
    stored["config"]["stack.context"] = True
    stored["hash"] = config_hash(stored["config"])
    (tmp_path / CONFIG_FILE).write_text(json.dumps(stored))
    with caplog.at_level("WARNING"):
        with claim_run_dir(cfg, tmp_path, "train.predicates", VOLATILE_KEYS):
            pass
    assert "options removed since: stack.context=True" in caplog.text
    stored["config"]["seed"] = 7
    (tmp_path / CONFIG_FILE).write_text(json.dumps(stored))
    with pytest.raises(ConfigMismatchError, match="seed"):
        with claim_run_dir(cfg, tmp_path, "train.predicates", VOLATILE_KEYS):
            pass
