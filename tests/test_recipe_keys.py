"""A recipe (conf/experiment/*.yaml) names only keys that its root config declares: every shipped recipe
passes, and a misspelt key is refused naming the file and the key, in a test and at launch."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from common.recipe_keys import UndeclaredRecipeKey, check_recipe, schema_of
from test_configs import CONF, EXPERIMENTS, ROOT, experiment_root


def _check(name: str, conf: Path = CONF) -> None:
    root = experiment_root(name, conf)
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        composed = compose(config_name=root, overrides=[f"+experiment={name}"], return_hydra_config=True)
        schema = schema_of(root, dict(composed.hydra.runtime.choices), compose)
    check_recipe(conf / "experiment" / f"{name}.yaml", schema, root)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_recipe_declares_only_known_keys(name):
    _check(name)


def _typo_recipe(folder: Path) -> Path:
    (folder / "experiment").mkdir(parents=True, exist_ok=True)
    path = folder / "experiment" / "typo_recipe.yaml"
    path.write_text("# @package _global_\n# A recipe with a misspelt key: python -m train.predicates +experiment=typo_recipe\n"
                    "defaults:\n  - override /detector_model: tiny\n"
                    "data:\n  max_train_sentences: 8\n  max_eval_sentence: 4\n"  # max_eval_sentences, misspelt
                    "trainer:\n  args:\n    gradient_accumulation_steps: 2\n")  # an HF TrainingArguments field: fine
    return path


def test_a_misspelt_key_is_refused(tmp_path):
    import shutil

    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf, ignore=shutil.ignore_patterns("__pycache__"))
    path = _typo_recipe(conf)
    with pytest.raises(UndeclaredRecipeKey) as e:
        _check("typo_recipe", conf)
    assert str(path) in str(e.value) and "data.max_eval_sentence " in str(e.value)
    assert "gradient_accumulation_steps" not in str(e.value)


def test_a_stacked_recipe_naming_a_neural_only_key_is_refused(tmp_path):
    """The neural classifiers' training settings (conf/classifier_training/neural.yaml) are not the stacked
    recipe's: a stacked recipe that sets one would train with it unread."""
    import shutil

    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf, ignore=shutil.ignore_patterns("__pycache__"))
    path = conf / "experiment" / "stacked_lr.yaml"
    path.write_text("# @package _global_\n# A stacked recipe with a neural setting: python -m train.entailment "
                    "+experiment=stacked_lr\ndefaults:\n  - override /classifier: stacked\n"
                    "cv:\n  folds: 2\ntrainer:\n  args:\n    learning_rate: 1e-4\n")
    with pytest.raises(UndeclaredRecipeKey) as e:
        _check("stacked_lr", conf)
    assert str(path) in str(e.value) and "trainer" in str(e.value) and "cv.folds" not in str(e.value)
    (conf / "experiment" / "neural_lr.yaml").write_text(path.read_text().replace("stacked", "tiny"))
    _check("neural_lr", conf)  # a neural classifier declares it


def test_a_misspelt_key_stops_the_launch(tmp_path):
    """The entry point refuses before its task runs (RecipeKeysCallback), naming the file and the key."""
    extra = tmp_path / "extra_conf"
    path = _typo_recipe(extra)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "train.predicates", f"--config-dir={extra}", "+experiment=typo_recipe",
                          f"hydra.run.dir={tmp_path / 'run'}", f"paths.data_dir={tmp_path / 'no_data'}"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert str(path) in out.stderr and "data.max_eval_sentence " in out.stderr, out.stderr[-2000:]
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_a_renamed_key_is_refused_naming_its_new_name(tmp_path):
    """An old recipe or command (optim.*, encoder.epochs: the optimizer settings took the TrainingArguments names)
    is refused with the name each setting has now, not only as an unknown key."""
    from hydra.core.hydra_config import HydraConfig

    from common.recipe_keys import RecipeKeysCallback
    from common.renamed_keys import RenamedKey

    recipe = tmp_path / "old_recipe.yaml"
    recipe.write_text("# @package _global_\noptim:\n  epochs: 5\n  batch_size: 8\nstack:\n  enabled: true\n  mispelt: 1\n")
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        schema = compose(config_name="train_entailment")
        # +key=value (Hydra's advice for a key it lacks) composes, and would train with the setting unread
        cfg = compose(config_name="train_contradiction", overrides=["+encoder.epochs=2"], return_hydra_config=True)
    with pytest.raises(UndeclaredRecipeKey) as e:
        check_recipe(recipe, schema, "train_entailment")
    msg = str(e.value)
    assert "optim.epochs -> trainer.args.num_train_epochs" in msg and "stack.mispelt" in msg
    assert "optim.batch_size -> trainer.args.per_device_train_batch_size" in msg and "misspelt key?" in msg
    HydraConfig.instance().set_config(cfg)
    try:
        with pytest.raises(RenamedKey, match=r"encoder\.epochs -> encoder\.trainer\.args\.num_train_epochs"):
            RecipeKeysCallback().on_job_start(config=cfg)
    finally:
        HydraConfig.instance().cfg = None  # other tests read the command line from it


@pytest.mark.slow  # a launch (15 s): the check itself is tested in-process above
def test_a_renamed_key_on_the_command_line_stops_the_launch(tmp_path):
    """python -m train.entailment names the new key before Hydra would answer "not in struct"."""
    out = subprocess.run([sys.executable, "-m", "train.entailment", "synthetic.optim.learning_rate=1e-4",
                          f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and not (tmp_path / "run").exists()
    assert "synthetic.optim.learning_rate -> synthetic.trainer.args.learning_rate" in out.stderr, out.stderr[-2000:]
