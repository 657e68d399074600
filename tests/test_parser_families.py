"""The parser's model families (train/parser/families.py): each conf/model/*.yaml names its class by `_target_`
and train.parser builds it with hydra.utils.instantiate; `kind` stays the name users write and run dirs store:
a model config of `kind` alone (written before `_target_`) builds the same class, a `kind` its `_target_`
contradicts is refused naming both, and a run dir stored before `_target_` existed still resumes."""
import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from parser_helpers import compose_cfg

CONF = Path(__file__).resolve().parents[1] / "conf"
MODELS = sorted(p.stem for p in (CONF / "model").glob("*.yaml"))


@pytest.mark.parametrize("name", MODELS)
def test_every_model_config_names_its_family_and_builds_it(name):
    from train.parser.families import FAMILIES, build_family

    cfg = compose_cfg("train_parser", [f"model={name}"]).model
    family = build_family(cfg)
    assert type(family) is FAMILIES[cfg.kind] and cfg._target_.endswith(type(family).__name__)
    plain = OmegaConf.create({k: v for k, v in OmegaConf.to_container(cfg).items() if k != "_target_"})
    assert type(build_family(plain)) is type(family)  # `kind` alone: a config from before `_target_`
    assert family.span == (cfg.kind == "span")


def test_a_kind_its_target_contradicts_or_an_unknown_kind_is_refused():
    from train.parser.families import build_family

    cfg = compose_cfg("train_parser", ["model=tiny_t5", "model.kind=span"]).model
    with pytest.raises(ValueError, match=r"model.kind='span' is not its _target_'s \(train.parser.families.TinyT5: "
                                         r"'tiny_t5'\)"):
        build_family(cfg)
    with pytest.raises(ValueError, match="model.kind 'nonsense' is unknown"):
        build_family(OmegaConf.create({"kind": "nonsense"}))
    with pytest.raises(ValueError, match="model.kind=seq2seq needs model.name"):
        build_family(compose_cfg("train_parser", ["model=t5_small", "model.name=null"]).model)


def test_a_run_dir_stored_before_target_existed_resumes(tmp_path, monkeypatch):
    import train.run_guard as guard
    from train.parser import VOLATILE_KEYS
    from train.run_guard import CONFIG_FILE, check_stored_config, flat_config

    # the rerun's command line chose the model group (model=tiny_t5): a key under it is a choice, not an added default
    monkeypatch.setattr(guard, "command_line_keys", lambda: {"model"})

    cfg = compose_cfg("train_parser", ["+experiment=tiny", "model=tiny_t5"])
    before = {k: v for k, v in flat_config(cfg, ()).items()  # what an older train.parser stored: no model._target_
              if k != "model._target_" and not any(k == v or k.startswith(v + ".") for v in VOLATILE_KEYS)}
    assert before["model.kind"] == "tiny_t5"
    (tmp_path / CONFIG_FILE).write_text(json.dumps({"trainer": "train.parser", "config": before}))
    assert check_stored_config(cfg, tmp_path, "train.parser", VOLATILE_KEYS, fresh=False) is False
