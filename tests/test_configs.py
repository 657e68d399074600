"""Every config under conf/ composes (torchtune's rule: a test composes every config so none rots).

Root configs (conf/*.yaml) are composed as they are, with every option of every group they use, and
every `+experiment=NAME` with the root its command names (`-m train.parser`, `-m train.predicates`, ...). Every YAML file opens with a comment saying what it is for.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"

ROOT_CONFIGS = sorted(p.stem for p in CONF.glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
ALL_YAML = sorted(CONF.rglob("*.yaml"))


def experiment_root(name: str, conf_dir: Path = CONF) -> str:
    """The root config an experiment overrides: the entry point its first lines' command runs
    (`-m train.predicates` -> train_predicates)."""
    head = "".join((conf_dir / "experiment" / f"{name}.yaml").read_text().splitlines(keepends=True)[:3])
    found = re.search(r"-m (train|evaluation)\.(\w+)", head)
    assert found, f"conf/experiment/{name}.yaml: its first lines name no command (python -m train.X ...)"
    root = f"{found.group(1)}_{found.group(2)}"
    assert (conf_dir / f"{root}.yaml").exists(), f"conf/experiment/{name}.yaml names {found.group(0)}: no conf/{root}.yaml"
    return root


def _compose(config_name: str, overrides=(), hydra_config: bool = False):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name=config_name, overrides=list(overrides), return_hydra_config=hydra_config)


def _resolved(cfg) -> dict:
    """Every interpolation resolves (mandatory `???` values may stay missing)."""
    return OmegaConf.to_container(cfg, resolve=True)


def _group_options() -> dict[str, list[str]]:
    """{group path: [options]} for every folder under conf/ holding YAML files (nested groups as a/b)."""
    groups = {}
    for d in sorted(p for p in CONF.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        options = sorted(p.stem for p in d.glob("*.yaml"))
        if options:
            groups[d.relative_to(CONF).as_posix()] = options
    return groups


GROUPS = _group_options()


def _choices(config_name: str, overrides=()) -> dict[str, str]:
    cfg = _compose(config_name, overrides, hydra_config=True)
    return {k: v for k, v in cfg.hydra.runtime.choices.items() if not k.startswith("hydra")}


def _group_cases() -> list[tuple[str, str, str]]:
    """(root config, group, option) for every option of every group that root config selects."""
    cases = []
    for root in ROOT_CONFIGS:
        try:
            groups = _choices(root)
        except Exception:  # a root config that does not compose fails test_root_config_composes instead
            continue
        for group in groups:  # a group put in at another package is named group@package (as its override is)
            for option in GROUPS.get(group.split("@")[0], []):
                cases.append((root, group, option))
    return cases


def _check_parser_config(cfg) -> None:
    """train_parser compositions: the trainer's own pre-flight check, and trainer.args are real fields."""
    from transformers import Seq2SeqTrainingArguments

    from train.parser import check_config

    check_config(cfg)
    fields = {f.name for f in dataclasses.fields(Seq2SeqTrainingArguments)}
    unknown = set(cfg.trainer.args) - fields
    assert not unknown, f"trainer.args keys that Seq2SeqTrainingArguments does not know: {sorted(unknown)}"


def test_found_configs():
    assert "train_parser" in ROOT_CONFIGS and "tiny" in EXPERIMENTS
    assert {"model", "data", "trainer", "deepspeed"} <= set(GROUPS)


@pytest.mark.parametrize("config_name", ROOT_CONFIGS)
def test_root_config_composes(config_name):
    cfg = _compose(config_name)
    _resolved(cfg)
    if config_name == "train_parser":
        _check_parser_config(cfg)


@pytest.mark.parametrize("root,group,option", _group_cases(), ids=lambda x: str(x))
def test_every_group_option_composes(root, group, option):
    cfg = _compose(root, [f"{group}={option}"])
    _resolved(cfg)
    if root == "train_parser":
        _check_parser_config(cfg)


def _selected_groups(conf_dir: Path = CONF) -> set[str]:
    """Groups that some root config or some experiment (on train_parser) selects."""
    def choices(config_name, overrides=()):
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=list(overrides), return_hydra_config=True)
        return {k.split("@")[0] for k in cfg.hydra.runtime.choices if not k.startswith("hydra")}

    used = set()
    for root in sorted(p.stem for p in conf_dir.glob("*.yaml")):
        used |= choices(root)
    for name in sorted(p.stem for p in (conf_dir / "experiment").glob("*.yaml")):
        used |= choices(experiment_root(name, conf_dir), [f"+experiment={name}"])
    return used


def test_every_group_is_used():
    """A group folder that no root config and no experiment selects is dead: nothing composes it,
    so test_every_group_option_composes never sees its options."""
    orphans = sorted(set(GROUPS) - _selected_groups())
    assert not orphans, f"config groups that no root config or experiment selects: {orphans}"
    # and every option of every group is composed by a test above
    composed = {(g.split("@")[0], o) for _, g, o in _group_cases()} | {("experiment", e) for e in EXPERIMENTS}
    missed = sorted(f"{g}/{o}" for g, opts in GROUPS.items() for o in opts if (g, o) not in composed)
    assert not missed, f"group options that no test composes: {missed}"


def test_an_orphaned_group_is_caught(tmp_path):
    """The check above fails when a group folder is added that nothing selects."""
    import shutil

    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf, ignore=shutil.ignore_patterns("__pycache__"))
    (conf / "orphan").mkdir()
    (conf / "orphan" / "only.yaml").write_text("# selected by nothing\nx: 1\n")
    groups = {p.parent.relative_to(conf).as_posix() for p in conf.rglob("*.yaml") if p.parent != conf}
    assert groups - _selected_groups(conf) == {"orphan"}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_composes(name):
    root = experiment_root(name)
    cfg = _compose(root, [f"+experiment={name}"])
    _resolved(cfg)
    if root == "train_parser":
        _check_parser_config(cfg)


@pytest.mark.parametrize("path", ALL_YAML, ids=lambda p: p.relative_to(CONF).as_posix())
def test_yaml_opens_with_a_comment(path):
    lines = path.read_text().splitlines()
    assert lines and lines[0].startswith("#"), f"{path.relative_to(ROOT)} must open with a comment line"
    # '# @package _global_' is a directive, not a description: a real comment must follow it
    header = [ln for ln in lines if ln.startswith("#")]
    described = [ln for ln in header if "@package" not in ln and ln.strip("# ").strip()]
    assert described and lines.index(described[0]) <= 2, f"{path.relative_to(ROOT)}: say what it is for"


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_opens_with_its_command(name):
    """lightning-hydra-template: an experiment file opens with the exact command that runs it."""
    text = (CONF / "experiment" / f"{name}.yaml").read_text()
    header = "\n".join(ln for ln in text.splitlines()[:10] if ln.startswith("#"))
    assert f"+experiment={name}" in header, f"conf/experiment/{name}.yaml: its opening comment must show the command"


def test_t5xl_experiment_is_the_published_recipe():
    assert (CONF / "experiment" / "t5xl.yaml").exists(), "conf/experiment/t5xl.yaml (the published recipe) is missing"
    cfg = _compose("train_parser", ["+experiment=t5xl"])
    args = cfg.trainer.args
    assert cfg.model.kind == "seq2seq" and cfg.model.name == "google/flan-t5-xl"
    assert args.get("bf16") is True
    assert args.get("fp16") is not True
    assert cfg.deepspeed.config.zero_optimization.stage == 3
    assert float(args.learning_rate) == pytest.approx(5e-5)
    assert float(args.num_train_epochs) == 5
    assert args.get("max_steps", -1) in (None, -1, 0), "max_steps would cut the 5 epochs short"
    assert str(args.get("optim") or "adamw_torch").startswith("adamw")
    fmt = cfg.format
    if OmegaConf.is_config(fmt):
        from models.parser.qa_format import get_format

        assert get_format(OmegaConf.to_container(fmt, resolve=True)) == get_format("qasem_parser")
    else:
        assert fmt == "qasem_parser"
    assert cfg.logger.enabled is True
    assert cfg.hub.push is True
