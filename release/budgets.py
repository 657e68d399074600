"""A release trains every model to a number of steps or epochs, never to the clock. A stage stopped by
`max_train_minutes` ends wherever the machine and its load let it, so two builds of one commit ship different
models. `max_train_minutes` stays an option for one's own runs; `python -m release` refuses a profile whose
training stage sets one (in its experiment file or the profile's overrides) before anything runs."""
from __future__ import annotations

from pathlib import Path

import yaml

# each training stage of a profile (`train:` in release/profiles/*.yaml) and the root config its entry point composes
TRAIN_CONFIGS = {"parser": "train_parser", "detector": "train_predicates", "entailment": "train_entailment",
                 "contradiction": "train_contradiction"}
TIME_KEY = "max_train_minutes"


def _set_keys(node, path: str = ""):
    """(dotted key, value) of every TIME_KEY in a config tree that is set (not null)."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key == TIME_KEY and value is not None:
                yield where, value
            else:
                yield from _set_keys(value, where)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _set_keys(value, f"{path}.{i}")


def time_budgets(profile: Path, conf: Path) -> list[str]:
    """'STAGE: KEY=VALUE (overrides)' for every training stage of the profile whose composed config stops on
    the clock; [] when every stage stops on steps or epochs."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    found = []
    for stage, overrides in (yaml.safe_load(Path(profile).read_text()).get("train") or {}).items():
        if stage not in TRAIN_CONFIGS:
            raise ValueError(f"{profile}: train.{stage} is not a training stage ({', '.join(TRAIN_CONFIGS)})")
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(Path(conf).resolve()), version_base="1.3"):
                cfg = compose(TRAIN_CONFIGS[stage], overrides=list(overrides or []))
        finally:
            GlobalHydra.instance().clear()
        for key, value in _set_keys(OmegaConf.to_container(cfg, resolve=False)):
            found.append(f"{stage}: {key}={value} ({' '.join(overrides or []) or 'no overrides'})")
    return found
