"""Settings that were renamed, and the name each has now, so that an old command or recipe is refused with
the replacement named. The optimizer settings of train.entailment and train.contradiction took the HF
TrainingArguments names under trainer.args (one optimizer schema for every trainer). Hydra itself answers an
old key with "Key 'optim' is not in struct", and suggests `+optim.epochs=...`, which would compose and train
with the setting unread; the entry points and the recipe check ask here first."""
from __future__ import annotations

_OPTIM = {"learning_rate": "learning_rate", "batch_size": "per_device_train_batch_size", "epochs": "num_train_epochs",
          "grad_accum": "gradient_accumulation_steps", "max_steps": "max_steps", "weight_decay": "weight_decay",
          "warmup_ratio": "warmup_steps"}  # warmup_steps < 1 is a share of the steps, as warmup_ratio was
_ENCODER = {"epochs": "num_train_epochs", "batch_size": "per_device_train_batch_size", "learning_rate": "learning_rate",
            "bf16": "bf16", "max_steps": "max_steps", "checkpoint_steps": "save_steps",
            "eval_batch_size": "per_device_eval_batch_size", "logging_steps": "logging_steps"}

# root config -> {old dotted key: its name now}
RENAMED: dict[str, dict[str, str]] = {
    "train_entailment": {**{f"optim.{k}": f"trainer.args.{v}" for k, v in _OPTIM.items()},
                         **{f"synthetic.optim.{k}": f"synthetic.trainer.args.{v}" for k, v in _OPTIM.items()},
                         "optim": "trainer.args", "synthetic.optim": "synthetic.trainer.args"},
    "train_contradiction": {f"encoder.{k}": f"encoder.trainer.args.{v}" for k, v in _ENCODER.items()},
}


class RenamedKey(ValueError):
    """A command or recipe sets a setting under the name it had before it was renamed."""


def replacement(key: str, root: str) -> str | None:
    """The name `key` (dotted) has now in the root config `root`, or None when it was not renamed. A key below a
    renamed block that is not itself one of its settings (optim.foo) gets the new block (trainer.args)."""
    renamed = RENAMED.get(root, {})
    if key in renamed:
        return renamed[key]
    for old in sorted(renamed, key=len, reverse=True):  # the innermost renamed block that holds it
        if key.startswith(old + "."):
            return renamed[old]
    return None


def override_keys(overrides) -> list[str]:
    """The dotted keys of Hydra command-line overrides (key=value, +key=value, ++key=value, ~key); flags skipped."""
    keys = []
    for o in overrides:
        if o.startswith("-") or ("=" not in o and not o.startswith("~")):
            continue
        keys.append(o.split("=", 1)[0].lstrip("+~"))
    return keys


def renamed_message(keys, root: str) -> str | None:
    """'old -> new' for each renamed key among `keys`, or None when there is none."""
    pairs = [(k, replacement(k, root)) for k in keys]
    pairs = [f"{k} -> {new}" for k, new in pairs if new]
    return "; ".join(pairs) or None


def refuse_renamed(overrides, root: str, where: str = "the command line") -> None:
    """Raise RenamedKey when `overrides` (Hydra's command-line form) set a renamed key, naming its new name."""
    msg = renamed_message(override_keys(overrides), root)
    if msg:
        raise RenamedKey(f"{where} sets a renamed setting of {root}: {msg} (the HF TrainingArguments names)")
