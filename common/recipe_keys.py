"""A recipe (conf/experiment/*.yaml, '# @package _global_') may only set keys that its root config and the
group options it selects declare. Hydra merges such a file permissively, so a misspelt key would add a new,
unread setting and the run would train something else than its file says; this check refuses it at launch
(RecipeKeysCallback, registered in each training root's hydra.callbacks) and in tests/test_configs.py."""
from __future__ import annotations

from pathlib import Path

import yaml
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from common.renamed_keys import refuse_renamed, renamed_message


def _training_arguments_fields() -> set[str]:
    import dataclasses

    from transformers import Seq2SeqTrainingArguments

    return {f.name for f in dataclasses.fields(Seq2SeqTrainingArguments)}


# nodes whose keys a library declares: where an entry point hands trainer.args whole to HF (Seq2Seq)TrainingArguments,
# any of its fields is declared (and HF refuses any other); the other trainers read only the keys their YAML names
DECLARED_ELSEWHERE = {("train_parser", "trainer.args"): _training_arguments_fields,
                      ("train_predicates", "trainer.args"): _training_arguments_fields}


class UndeclaredRecipeKey(ValueError):
    """A recipe names keys its root config does not declare."""


def undeclared_keys(recipe: dict, schema: DictConfig, root: str = "") -> list[str]:
    """Dotted paths of the keys of `recipe` (a loaded experiment file) that `schema` (the root config composed
    with the same group options, without the recipe) lacks. Under a key the schema holds as null or as a
    plain value, the recipe may put a mapping of its own (a random model's config, say)."""
    out = []

    def walk(node: dict, declared, prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if not prefix and key in ("defaults", "hydra"):
                continue
            if key not in declared.keys():  # keys(): a mandatory `???` value is declared too
                library = DECLARED_ELSEWHERE.get((root, prefix[:-1]))
                if not (library and key in library()):
                    out.append(path)
            elif isinstance(value, dict) and OmegaConf.is_dict(declared._get_node(key)):
                walk(value, declared[key], path + ".")

    walk(recipe or {}, schema, "")
    return out


def schema_of(config_name: str, choices: dict, compose) -> DictConfig:
    """The root config with the run's group options (from hydra.runtime.choices) and no experiment."""
    overrides = [f"{g}={o}" for g, o in choices.items()
                 if g != "experiment" and not g.startswith("hydra") and o is not None]
    return compose(config_name=config_name, overrides=overrides)


def leaf_keys(node, prefix: str = "") -> list[str]:
    """The dotted keys of a loaded YAML mapping's leaves (`prefix`: the mapping's own key)."""
    if not isinstance(node, dict) or not node:
        return [prefix] if prefix else []
    return [k for key, value in node.items() for k in leaf_keys(value, f"{prefix}.{key}" if prefix else str(key))]


def _at(node: dict, dotted: str):
    for part in dotted.split("."):
        node = node[part]
    return node


def check_recipe(recipe_file: Path, schema: DictConfig, root: str) -> None:
    """Raise UndeclaredRecipeKey naming the file and its undeclared keys (`root`: the root config's name), and the
    name a renamed one has now."""
    recipe = yaml.safe_load(Path(recipe_file).read_text()) or {}
    bad = undeclared_keys(recipe, schema, root)
    if bad:
        # an undeclared block (optim:) is reported once; its settings say what each is called now
        leaves = {b: leaf_keys(_at(recipe, b), b) for b in bad}
        renamed = renamed_message([k for ks in leaves.values() for k in ks], root)
        unknown = [b for b, ks in leaves.items() if not renamed_message(ks, root)]
        raise UndeclaredRecipeKey(
            f"{recipe_file}: {', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not declared by its root config or "
            "the group options it selects" + (f"; renamed: {renamed}" if renamed else "") +
            (" (a misspelt key? a new setting is declared, with its default, in the YAML that the code reads it from)"
             if unknown else ""))


def experiment_file(name: str, config_sources) -> Path | None:
    """conf/experiment/NAME.yaml in the first file source of the run's config search path that has it."""
    for source in config_sources:
        if source.get("schema") == "file":
            path = Path(source["path"]) / "experiment" / f"{name}.yaml"
            if path.is_file():
                return path
    return None


class RecipeKeysCallback(Callback):
    """At launch (before the task runs): refuse an experiment file that names an undeclared key, and a command line
    that sets a renamed one."""

    def on_job_start(self, config: DictConfig, **kwargs) -> None:
        from hydra import compose
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
        # `+optim.epochs=3`, as Hydra suggests for a key it does not find, composes and would leave it unread
        refuse_renamed(hc.overrides.task, hc.job.config_name)
        choices = dict(hc.runtime.choices)
        name = choices.get("experiment")
        if not name:
            return
        path = experiment_file(str(name), OmegaConf.to_container(hc.runtime.config_sources))
        if path is None:  # a recipe packaged elsewhere: nothing here to read it from
            return
        check_recipe(path, schema_of(hc.job.config_name, choices, compose), hc.job.config_name)
